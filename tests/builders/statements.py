"""Telling the statements a request's route runs from those of the app's background work
and of the token check before the route, for tests that watch every statement on the
app's engine."""

from __future__ import annotations

# The plan watch (api/plan_watch.py) reads new plan ids, and at its start the newest,
# every PLAN_WATCH_INTERVAL_S on the app's engine, in a transaction, at any moment.
PLAN_WATCH_READS = ("SELECT scale_plans.id, jobs.uid", "SELECT max(scale_plans.id)")


def from_background(statement: str) -> bool:
    return statement.lstrip().startswith(PLAN_WATCH_READS)


def from_authentication(statement: str) -> bool:
    """The token check (brain.services.tokens): it reads the token state, and sometimes
    the tokens, on a read session of its own (no transaction) before the route runs."""
    text = statement.lstrip()
    return text.startswith("SELECT token_state.") or "FROM api_tokens" in text
