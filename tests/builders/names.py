"""Names holding what no stored name may (brain.names), and a scan of what the store
holds under names."""

from __future__ import annotations

from hypothesis import strategies as st
from sqlalchemy import Engine, String, Text, select

from brain.db.models import ApiToken, Base, JobRow
from brain.names import name_problem

# What a request can carry: every refused category but the surrogates (not UTF-8, so
# neither JSON over HTTP nor protobuf carries one).
SENDABLE_REFUSED = ("Cc", "Cf", "Zl", "Zp")
ALLOWED = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"), exclude_characters="/")


def refused_character() -> st.SearchStrategy[str]:
    """One character of a refused category, as Hypothesis's Unicode database has them
    (not brain.names' own table), the usual offenders most often."""
    offenders = st.sampled_from(["\n", "\r", "\x1b", "\u202e", "\u2066", "\u200b", "\u2028"])
    return offenders | st.characters(categories=SENDABLE_REFUSED)


def name_holding_refused(around: int = 20) -> st.SearchStrategy[str]:
    """A short name with a refused character somewhere in it (no ``/``, which a path
    would split on)."""
    side = st.text(ALLOWED, max_size=around)
    return st.tuples(side, refused_character(), side).map("".join)


def stored_names_refused(engine: Engine) -> list[tuple[str, str, str]]:
    """(table, column, value) of every stored name that holds a refused character: every
    string column but free text (Text), the roles of jobs and the namespaces of tokens."""
    found = []
    with engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            columns = [
                c
                for c in table.columns
                if isinstance(c.type, String) and not isinstance(c.type, Text)
            ]
            for column in columns:
                for value in conn.scalars(select(column).where(column.is_not(None))):
                    if name_problem(value):
                        found.append((table.name, column.name, value))
        for roles in conn.scalars(select(JobRow.roles)):
            found += [("jobs", "roles", role) for role in roles or {} if name_problem(role)]
        for namespaces in conn.scalars(select(ApiToken.namespaces)):
            found += [("api_tokens", "namespaces", n) for n in namespaces or [] if name_problem(n)]
    return found
