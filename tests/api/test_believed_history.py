"""History is trustworthy: a run longer than BRAIN_HISTORY_MAX_RUN_DAYS (or whose
samples span longer) counts in no aggregate and says why; a run that started before
the window counts its share inside it; an owner is one per namespace.

flat_job: one node, ``cpu_request`` cores requested and ``cpu_used`` used for ``hours``,
so requested core-hours = cpu_request x hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.domain import utcnow
from brain.summaries import summarize_job
from tests.builders import (
    add_node,
    add_points,
    bearer,
    flat_job,
    make_job,
    recent_hour,
    token_secret,
)


def _efficient_runs(session, namespace: str) -> None:
    """Three runs of alice using 3.6 of 4 cores: CPU efficiency 0.9, memory 0.5."""
    for i in range(3):
        job = flat_job(
            session,
            f"alice-{namespace}-{i}",
            start=recent_hour(days_ago=2 + i),
            cpu_request=4,
            cpu_used=3.6,
            user="alice",
            namespace=namespace,
        )
        summarize_job(session, job)


def _priority_rows(client) -> list[tuple]:
    items = client.get("/api/v1/priorities", params={"days": 30}).json()["items"]
    return [
        (i["namespace"], i["key"], i["priority"]["score"], i["priority"]["priority_class"])
        for i in items
    ]


def test_a_run_spanning_years_moves_no_priority_ranking_or_history(client, session):
    _efficient_runs(session, "team-b")
    session.commit()
    before = _priority_rows(client)
    # score = mean(CPU 0.9, memory 0.5) = 0.7: high (from 0.6)
    assert before == [("team-b", "alice", pytest.approx(0.7), "high")]
    ranking_before = client.get("/api/v1/portraits", params={"by": "user", "days": 30}).json()

    # Another namespace registers alice's "run" with samples in 2000 and now, succeeded.
    start = datetime(2000, 1, 1, tzinfo=UTC)
    fake = make_job(session, "fake", start=start, user="alice", namespace="team-a", hours=None)
    fake.finished_at = utcnow() - timedelta(minutes=1)
    add_node(session, fake, "worker-0", "worker", created_at=start, cpu=1000, memory_mib=1024)
    add_points(
        session,
        fake,
        "worker-0",
        "worker",
        [
            {"ts": start, "cpu": 0.0, "memory_mib": 1},
            {"ts": utcnow() - timedelta(minutes=2), "cpu": 0.0, "memory_mib": 1},
        ],
    )
    summarize_job(session, fake)
    session.commit()

    assert _priority_rows(client) == before
    ranking = client.get("/api/v1/portraits", params={"by": "user", "days": 30}).json()
    assert ranking["items"] == ranking_before["items"]
    portrait = client.get("/api/v1/portraits/jobs/fake").json()
    assert portrait["excluded_reason"].startswith("a run of 9")  # over 9,000 days
    assert "BRAIN_HISTORY_MAX_RUN_DAYS (60)" in portrait["excluded_reason"]
    assert client.get("/api/v1/portraits/jobs/alice-team-b-0").json()["excluded_reason"] is None


def test_the_same_user_in_two_namespaces_is_two_owners(client, session):
    _efficient_runs(session, "team-b")
    for i in range(3):  # alice of team-a asks 4 cores and uses 0.4: CPU 0.1, memory 0.5
        job = flat_job(
            session,
            f"lazy-{i}",
            start=recent_hour(days_ago=2 + i),
            cpu_request=4,
            cpu_used=0.4,
            user="alice",
            namespace="team-a",
        )
        summarize_job(session, job)
    session.commit()
    # mean(0.1, 0.5) = 0.3: normal (from 0.3); team-b's alice stays high
    assert _priority_rows(client) == [
        ("team-a", "alice", pytest.approx(0.3), "normal"),
        ("team-b", "alice", pytest.approx(0.7), "high"),
    ]


def test_a_run_that_started_before_the_window_counts_its_share(client, session):
    # 20 days (480 h) of 4 cores ending 5 days ago: 1,920 core-hours requested in all
    end = (utcnow() - timedelta(days=5)).replace(microsecond=0)
    job = flat_job(
        session, "long", start=end - timedelta(hours=480), hours=480, cpu_request=4, cpu_used=2
    )
    summarize_job(session, job)
    session.commit()
    portrait = client.get("/api/v1/portraits/users/alice", params={"days": 10}).json()
    # a 10-day window holds its last 5 days: 5 / 20 of it, 480 core-hours requested,
    # 240 used; the 90-day window holds all of it
    cpu = portrait["totals"]["hours"]["cpu"]
    assert cpu["requested_core_hours"] == pytest.approx(480, rel=1e-3)
    assert cpu["used_core_hours"] == pytest.approx(240, rel=1e-3)
    assert portrait["totals"]["run_hours"] == pytest.approx(120, rel=1e-3)
    whole = client.get("/api/v1/portraits/users/alice", params={"days": 90}).json()["totals"]
    assert whole["hours"]["cpu"]["requested_core_hours"] == pytest.approx(1920)


def test_a_namespace_limited_token_reads_its_namespaces_owners_only(settings, session, db):
    _efficient_runs(session, "team-b")
    _efficient_runs(session, "team-a")
    session.commit()
    secret = token_secret(db, "a", "read", ["team-a"])
    headers = bearer(secret)
    with TestClient(create_app(settings)) as client:
        mine = client.get("/api/v1/portraits/users/alice?namespace=team-a", headers=headers)
        assert mine.status_code == 200
        # team-a's three runs only: 3 x 4 core-hours requested
        assert mine.json()["totals"]["hours"]["cpu"]["requested_core_hours"] == pytest.approx(12)
        for path in (
            "/api/v1/portraits/users/alice",
            "/api/v1/portraits/users/alice?namespace=team-b",
            "/api/v1/priorities",
            "/api/v1/priorities?namespace=team-b",
        ):
            assert client.get(path, headers=headers).status_code == 403, path
        rows = client.get("/api/v1/priorities?namespace=team-a", headers=headers).json()
        assert [(i["namespace"], i["key"]) for i in rows["items"]] == [("team-a", "alice")]
