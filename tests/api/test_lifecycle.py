"""A job's life through the API: finish → summary → history for the next run's plan."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from api.app import create_app
from api.server import summary_refresher
from api.state import server_state
from brain.config import Settings
from brain.db.engine import make_session_factory
from brain.db.models import JobRow, JobSummaryRow
from brain.optimizing import load_registry
from brain.savings.stored import store_pending_savings
from brain.summaries.refresher import refresh_once
from tests.builders import job_body, node_point

ROLES = {
    "ps": {"count": 2, "cpu": 8, "memory_mib": 8192},
    "chief": {"count": 1, "cpu": 8, "memory_mib": 8192},
    "worker": {"count": 1, "cpu": 8, "memory_mib": 8192},
}
# Per related job, per node: two samples of (cpu cores, memory MiB).
RELATED = {
    "run-a": {
        "ps-0": [(2, 1000), (4, 2000)],
        "ps-1": [(1, 1500), (3, 1500)],
        "chief-0": [(5, 3000), (7, 4000)],
    },
    "run-b": {
        "ps-0": [(4, 2500), (4, 2500)],
        "ps-1": [(2, 2500), (2, 2500)],
        "chief-0": [(6, 5000), (6, 5000)],
    },
    "run-c": {
        "ps-0": [(3, 1000), (5, 3000)],
        "ps-1": [(3, 1000), (3, 1000)],
        "chief-0": [(4, 2000), (4, 2000)],
        "worker-0": [(8, 1000), (2, 6000)],
    },
}


def _run_and_finish(client, uid: str, day: int, nodes: dict) -> None:
    start = f"2026-03-{day:02d}T00:00:00Z"
    body = job_body(roles=ROLES, status="running", created_at=start, started_at=start)
    assert client.put(f"/api/v1/jobs/{uid}", json=body).status_code == 201
    points = [
        node_point(f"{uid}-edljob-{node}", f"2026-03-{day:02d}T00:0{i}:00Z", cpu, mem)
        for node, series in nodes.items()
        for i, (cpu, mem) in enumerate(series)
    ]
    client.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": points})
    finished = client.patch(
        f"/api/v1/jobs/{uid}",
        json={"status": "succeeded", "finished_at": f"2026-03-{day:02d}T01:00:00Z"},
    )
    assert finished.status_code == 200


def test_finishing_summarizes_and_the_next_run_starts_from_history(client, db):
    for day, (uid, nodes) in enumerate(RELATED.items(), start=1):
        _run_and_finish(client, uid, day, nodes)
    with make_session_factory(db)() as session:
        summarized = session.scalars(select(JobRow.uid).where(JobRow.summarized_at.is_not(None)))
        assert sorted(summarized) == ["run-a", "run-b", "run-c"]

    client.put("/api/v1/jobs/run-d", json=job_body(roles=ROLES, created_at="2026-03-10T00:00:00Z"))
    plan = client.post(
        "/api/v1/jobs/run-d/optimize", json={"stage": "create", "optimizers": ["startup"]}
    ).json()
    # Total PS CPU (sum of PS means): a 3+2=5, b 4+2=6, c 4+3=7 -> mean 6.
    # Largest single PS CPU: 5 (run-c ps-0) -> ceil(6 / 5) = 2 PS of 5 cores.
    # Total PS memory (sum of PS peaks): a 2000+1500, b 2500+2500, c 3000+1000 -> max 5000;
    # per PS 5000 / 2 x 1.2 margin = 3000 MiB.
    assert plan["roles"]["ps"] == {
        "count": 2,
        "cpu": 5.0,
        "memory_mib": 3000.0,
        "gpu": 0.0,
        "cpu_limit": None,
    }
    # Chief: the largest CPU (run-c worker-0: 8) and memory (run-c worker-0: 6000) used by
    # any worker or chief.
    assert (plan["roles"]["chief"]["cpu"], plan["roles"]["chief"]["memory_mib"]) == (8.0, 6000.0)
    evidence = next(r for r in plan["reasons"] if "related_jobs" in r["evidence"])["evidence"]
    assert sorted(evidence["related_jobs"]) == ["run-a", "run-b", "run-c"]


def test_samples_after_finish_make_the_summary_stale_until_refreshed(client, db):
    start = "2026-03-01T00:00:00Z"
    body = job_body(
        status="succeeded", created_at=start, started_at=start, finished_at="2026-03-01T01:00:00Z"
    )
    client.put("/api/v1/jobs/late", json=body)  # summarized at once, with no samples yet
    points = [
        node_point("late-edljob-ps-0", f"2026-03-01T00:0{i}:00Z", 2.0, 100.0 * (i + 1))
        for i in range(3)
    ]
    client.post("/api/v1/jobs/late/samples", json={"nodes": points})
    factory = make_session_factory(db)
    with factory() as session:
        job = session.scalar(select(JobRow).where(JobRow.uid == "late"))
        assert job.summarized_at is None
        assert session.get(JobSummaryRow, job.id).samples == 0

    # brain serve hands the refresher the savings replay to run after the summaries.
    def store_replays() -> None:
        store_pending_savings(factory, Settings(), load_registry())

    assert refresh_once(factory, after_summaries=store_replays) == 1
    with factory() as session:
        job = session.scalar(select(JobRow).where(JobRow.uid == "late"))
        assert job.summarized_at is not None
        summary = session.get(JobSummaryRow, job.id)
        assert summary.samples == 3
        assert summary.savings_computed_at is not None
        # The PS was replayed on its 3 samples (one a minute): 3 minutes, no OOM kill.
        assert summary.savings_replayed_node_hours == pytest.approx(3 / 60)
        assert summary.savings_brain_ooms == 0
    assert refresh_once(factory) == 0  # nothing stale any more

    # With retention, the same cycle ages out the (March) samples of the summarized job;
    # its summary keeps the numbers it was computed from.
    assert refresh_once(factory, retention_days=30) == 0
    assert client.get("/api/v1/jobs/late/samples").json()["nodes"] == []
    with factory() as session:
        job = session.scalar(select(JobRow).where(JobRow.uid == "late"))
        assert session.get(JobSummaryRow, job.id).samples == 3


def test_refresher_runs_for_the_app_lifetime(settings):
    settings.summary_interval_s = 0.05
    with TestClient(create_app(settings, parts=[summary_refresher])) as app_client:
        refreshers = server_state(app_client.app).shutdown_hooks
        assert len(refreshers) == 1
        thread = refreshers[0].__self__._thread
        assert thread.is_alive()
    assert not thread.is_alive()

    settings.summary_interval_s = 0
    with TestClient(create_app(settings, parts=[summary_refresher])) as app_client:
        assert server_state(app_client.app).shutdown_hooks == []


def test_learned_margin_runs_per_request_on_the_same_history(client):
    for day, (uid, nodes) in enumerate(RELATED.items(), start=1):
        _run_and_finish(client, uid, day, nodes)
    client.put("/api/v1/jobs/run-d", json=job_body(roles=ROLES, created_at="2026-03-10T00:00:00Z"))
    plan = client.post(
        "/api/v1/jobs/run-d/optimize", json={"stage": "create", "optimizers": ["learned_margin"]}
    ).json()
    # Chief memory peaks 4000, 5000, 2000 MiB: envelope 5000; 5000 x (1.3 + 1/sqrt(3)) +
    # 768 MiB headroom = 10,153 MiB, above the 8192 MiB request, which caps it.
    assert plan["roles"]["chief"]["memory_mib"] == 8192.0
    assert plan["optimizers"] == ["learned_margin"]
    assert {r["optimizer"] for r in plan["reasons"]} >= {"learned_margin"}
