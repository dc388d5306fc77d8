"""The request owns the transaction: committed when the handler returns (before the
response and its background tasks), rolled back when it raises. Handlers and services
never commit; services take a savepoint where concurrent requests race."""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import BackgroundTasks, Request
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from api.app import create_app
from api.deps import SessionDep
from api.state import server_state
from brain.db.models import JobRow, NodeRow
from brain.errors import InvalidInput
from brain.services import jobs, nodes
from tests.builders import job_body, make_job, recent_hour

ROOT = Path(__file__).resolve().parents[2]


def _transaction_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.func.attr}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("commit", "rollback")
    ]


def test_routers_and_services_neither_commit_nor_roll_back():
    paths = [*(ROOT / "api/routers").rglob("*.py"), *(ROOT / "brain/services").rglob("*.py")]
    assert len(paths) > 10  # the scan sees the code
    assert [call for path in paths for call in _transaction_calls(path)] == []


def _job(session: Session, uid: str) -> None:
    make_job(session, uid, start=recent_hour())


def _count_jobs(engine) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(JobRow))


@pytest.fixture
def probe(settings) -> Iterator[tuple[TestClient, list[int]]]:
    """The app with two extra routes: one writes then fails, one writes and schedules a
    background task that counts jobs from its own session."""
    app = create_app(settings)
    seen_by_background: list[int] = []

    def write_then_fail(session: SessionDep) -> dict:
        _job(session, "half-done")
        raise InvalidInput("refused after writing", field="uid")

    def write(session: SessionDep, request: Request, background: BackgroundTasks) -> dict:
        _job(session, "done")
        factory = server_state(request.app).session_factory
        background.add_task(lambda: seen_by_background.append(_count_with(factory)))
        return {"ok": True}

    app.add_api_route("/probe/fail", write_then_fail, methods=["POST"])
    app.add_api_route("/probe/write", write, methods=["POST"])
    with TestClient(app) as client:
        yield client, seen_by_background


def _count_with(factory) -> int:
    with factory() as session:
        return session.scalar(select(func.count()).select_from(JobRow))


def test_an_error_after_a_write_rolls_it_back_and_keeps_the_envelope(probe, db):
    client, _ = probe
    response = client.post("/probe/fail")
    assert response.status_code == 422
    assert response.json() == {
        "error": {"code": "invalid", "message": "refused after writing", "field": "uid"}
    }
    assert _count_jobs(db) == 0


def test_a_write_commits_before_the_response_and_its_background_tasks(probe, db):
    client, seen_by_background = probe
    assert client.post("/probe/write").status_code == 200
    assert seen_by_background == [1]
    assert _count_jobs(db) == 1


def test_bad_patch_changes_nothing(client):
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    response = client.patch(
        "/api/v1/jobs/j",
        json={
            "status": "succeeded",
            "started_at": "2026-01-01T10:00:00Z",
            "finished_at": "2026-01-01T09:00:00Z",
        },
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "finished_at"
    got = client.get("/api/v1/jobs/j").json()
    assert (got["status"], got["started_at"], got["finished_at"]) == ("running", None, None)


def test_losing_the_create_race_updates_and_keeps_the_rest_of_the_transaction(db):
    """Two PUTs of a new uid: the loser's insert fails on the unique uid once the winner
    commits; only its savepoint is undone, so its earlier write stays and it updates the
    winner's job."""

    def winner(session: Session) -> None:
        _job(session, "race")

    def loser(session: Session):
        _job(session, "earlier-write")
        spec = jobs.JobInput(name="renamed", user="u", strategy="ps")
        job, created = jobs.upsert_job(session, "race", spec)
        return created, job.name

    assert _race(db, winner, loser) == (False, "renamed")
    with Session(db) as check:
        names = dict(check.execute(select(JobRow.uid, JobRow.name)).all())
    assert names == {"race": "renamed", "earlier-write": "resnet"}


def test_a_node_registered_while_a_sample_batch_creates_it_is_updated(db):
    """PUT of a node that a concurrent sample batch is creating: the PUT's insert fails
    once the batch commits, its savepoint is undone and it updates the node (no 500)."""
    with Session(db) as setup, setup.begin():
        make_job(setup, "j", start=recent_hour(), status="running")

    def batch(session: Session) -> None:
        nodes.ensure_nodes(session, jobs.get_job(session, "j"), [nodes.NodeRef("w-0", "worker", 0)])

    def put(session: Session):
        spec = nodes.NodeInput(role="worker", index=0, cpu=6, memory_mib=2048)
        node, created = nodes.upsert_node(session, jobs.get_job(session, "j"), "w-0", spec)
        return created, node.cpu, node.memory_mib

    assert _race(db, batch, put) == (False, 6, 2048)
    with Session(db) as check:
        assert check.scalar(select(func.count()).select_from(NodeRow)) == 1


def _race(db, first, second):
    """``first`` writes and holds its transaction open; ``second`` runs in its own
    transaction on another thread until PostgreSQL makes it wait for ``first``'s row;
    then ``first`` commits. Returns what ``second`` returned (or raises what it raised)."""
    outcome: dict = {}

    def run_second() -> None:
        try:
            with Session(db) as session, session.begin():
                outcome["value"] = second(session)
        except Exception as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    with Session(db) as holder:
        with holder.begin():
            first(holder)
            holder.flush()
            thread = threading.Thread(target=run_second)
            thread.start()
            _wait_for_a_lock_wait(db)
        thread.join(timeout=60)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _wait_for_a_lock_wait(db) -> None:
    """Until a backend of this database waits on a lock (bounded: 20 s)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    with db.connect() as conn:
        for _ in range(400):
            if conn.execute(query).scalar():
                return
            conn.rollback()
            time.sleep(0.05)
    raise AssertionError("the second transaction never waited for the first")
