"""The request owns the transaction: committed when the handler returns (before the
response and its background tasks), rolled back when it raises. Handlers and services
never commit; services take a savepoint where concurrent requests race."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import BackgroundTasks, Request
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.app import create_app
from api.deps import SessionDep
from brain.db.models import JobRow
from brain.errors import InvalidInput
from brain.services import jobs
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
        factory = request.app.state.session_factory
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


def test_losing_the_create_race_updates_and_keeps_the_rest_of_the_transaction(db, monkeypatch):
    """Two PUTs of a new uid: the loser's insert fails on the unique uid; only its
    savepoint is undone, so its earlier writes stay and it updates the winner's job."""
    with Session(db) as winner, winner.begin():
        _job(winner, "race")

    with Session(db) as loser, loser.begin():
        _job(loser, "earlier-write")
        monkeypatch.setattr(jobs, "find_job", _missing_once(jobs.find_job))
        spec = jobs.JobInput(name="renamed", user="u", strategy="ps")
        job, created = jobs.upsert_job(loser, "race", spec)
        assert created is False
        assert job.name == "renamed"

    with Session(db) as check:
        names = dict(check.execute(select(JobRow.uid, JobRow.name)).all())
    assert names == {"race": "renamed", "earlier-write": "resnet"}


def _missing_once(find_job):
    """find_job that misses the first time, as when the other request commits between
    this one's lookup and its insert."""
    calls = []

    def find(session, uid):
        calls.append(uid)
        return None if len(calls) == 1 else find_job(session, uid)

    return find
