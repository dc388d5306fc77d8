"""A job that finished moments ago is history for the very next create stage or
suggestion, although its summary is written after the finish report's response."""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import event

from api.state import server_state
from brain.config import Settings
from brain.db.models import JobSummaryRow
from brain.domain import RoleSpec, Stage, utcnow
from brain.portraits.suggestions import SuggestionQuery, suggest
from brain.services.optimizer_context import build_context
from brain.summaries import summarize_job
from tests.builders import flat_job, make_job, recent_hour
from tests.builders.optimizers import registry
from tests.builders.statements import from_background

SETTINGS = Settings(stage_optimizers={"create": []})


def _finished_unsummarized(session, uid="done", **keys):
    """A succeeded run (4 cores asked, 2 used) whose summary is not written yet, as right
    after PATCH status succeeded: the background summary has not run."""
    job = flat_job(
        session, uid, start=recent_hour(1), cpu_request=4, cpu_used=2, user="alice", **keys
    )
    session.flush()
    assert session.get(JobSummaryRow, job.id) is None
    return job


def test_the_next_create_stage_sees_a_job_finished_moments_ago(session):
    done = _finished_unsummarized(session, dataset="imagenet")
    new = make_job(
        session,
        "next",
        start=utcnow() - timedelta(minutes=1),
        status="pending",
        user="alice",
        dataset="imagenet",
        roles={"worker": RoleSpec(count=1)},
    )

    context = build_context(session, new, Stage.create, SETTINGS)

    [history] = context.history
    assert history.job.uid == "done"
    # Its one worker used 2 of 4 cores for the hour.
    assert [(n.role, n.cpu_mean, n.requested.cpu) for n in history.nodes] == [("worker", 2, 4)]
    assert history.duration_s == 3600
    # Written in the reader's transaction, final, so it is not computed again.
    assert session.get(JobSummaryRow, done.id).final
    assert done.summarized_at is not None


def test_the_next_suggestion_sees_it_and_other_users_runs_are_left_alone(session):
    _finished_unsummarized(session, dataset="imagenet")
    other = flat_job(
        session, "bob-run", start=recent_hour(1), cpu_request=4, cpu_used=2, user="bob"
    )

    suggestion = suggest(
        session, registry(), SETTINGS, SuggestionQuery(user="alice", dataset="imagenet")
    )

    assert [r.uid for r in suggestion.basis.runs] == ["done"]
    assert session.get(JobSummaryRow, other.id) is None


def _autocommit_of_each_statement(client) -> list[tuple[bool, str]]:
    # The request's token check reads too, without a transaction (api.app's verifier).
    seen: list[tuple[bool, str]] = []

    def note(conn, _cursor, statement, *_rest) -> None:
        if not from_background(statement):
            seen.append((conn.connection.dbapi_connection.autocommit, statement))

    event.listen(server_state(client.app).engine, "before_cursor_execute", note)
    return seen


def _pool_empties(pool, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while pool.checkedout():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_suggestion_over_http_summarizes_it_in_a_transaction(client, session_factory):
    # GETs read without a transaction and cannot write; a suggestion that must write the
    # summary of a run that finished moments ago is run again in one.
    with session_factory() as session:
        done = _finished_unsummarized(session, dataset="imagenet")
        session.commit()
    autocommit = _autocommit_of_each_statement(client)

    response = client.get("/api/v1/suggestions", params={"user": "alice", "dataset": "imagenet"})

    assert response.status_code == 200
    assert [r["uid"] for r in response.json()["basis"]["runs"]] == ["done"]
    with session_factory() as session:
        assert session.get(JobSummaryRow, done.id).final
    # The read that found it unsummarized, then the summary and the answer in a transaction.
    # Located by statement, not by position: work the app started in the background may
    # run statements of its own on the same engine.
    write = next(
        i for i, (_, sql) in enumerate(autocommit) if sql.startswith("INSERT INTO job_summaries")
    )
    assert autocommit[write][0] is False
    assert any(ac and sql.startswith("SELECT jobs.") for ac, sql in autocommit[:write])
    # The request gave its connection back: the pool empties, once the app's background
    # work (which takes and returns connections of its own at any time) lets it.
    assert _pool_empties(server_state(client.app).engine.pool)


def test_a_suggestion_with_nothing_to_summarize_reads_without_a_transaction(
    client, session_factory
):
    with session_factory() as session:
        done = _finished_unsummarized(session, dataset="imagenet")
        summarize_job(session, done)
        session.commit()
    autocommit = _autocommit_of_each_statement(client)

    response = client.get("/api/v1/suggestions", params={"user": "alice", "dataset": "imagenet"})

    assert [r["uid"] for r in response.json()["basis"]["runs"]] == ["done"]
    assert autocommit and all(ac for ac, _ in autocommit)
