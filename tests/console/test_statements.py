"""How many statements the console's busiest pages run: a fixed few, whatever the number
of jobs, with the token state read once, by the sign-in check (the header knows from the
page's principal whether access is open, without reading it again)."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from api.console.session import COOKIE
from api.state import server_state
from tests.builders.statements import from_background

# Page -> statements: the token state; then on the overview the jobs by status, the jobs
# finished today, the window's weeks, its top wasters and their spend, the cluster; on
# the jobs list a page of jobs with their count; on the job page the job with its
# summary, its nodes' roles, its plans, its nodes' indexes (for the ScalePlans), its
# events, and the advice's related runs, their nodes and their OOM kills.
STATEMENTS = {"/ui/": 7, "/ui/jobs": 2, "/ui/jobs/hand-1": 9}


@pytest.fixture
def statements(client) -> list[str]:
    seen: list[str] = []

    def note(_conn, _cursor, statement, *_rest) -> None:
        if not from_background(statement):
            seen.append(statement)

    event.listen(server_state(client.app).engine, "before_cursor_execute", note)
    return seen


def token_state_reads(statements: list[str]) -> int:
    return sum(s.lstrip().startswith("SELECT token_state.") for s in statements)


@pytest.mark.parametrize("signed_in", [False, True])
@pytest.mark.parametrize(("path", "count"), STATEMENTS.items())
def test_a_page_reads_the_token_state_once_and_a_fixed_few_statements(
    client, history, statements, make_token, signed_in, path, count
):
    if signed_in:
        client.cookies.set(COOKIE, make_token("admin", "admin"), path="/ui/")
        # The first request reads the new token's row: later ones have it cached.
        assert client.get(path).status_code == 200
    statements.clear()
    page = client.get(path)
    assert page.status_code == 200
    assert ("open access" in page.text) is not signed_in
    assert token_state_reads(statements) == 1
    assert len(statements) == count, [s.split("\n")[0][:80] for s in statements]
