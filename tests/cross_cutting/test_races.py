"""Concurrent calls for one job keep the promises sequential calls keep, on PostgreSQL
and on the SQLite default: 20 parallel optimize calls leave one plan proposed, 20
parallel OOM optimizes store one plan and answer all with it, and 20 parallel status
reports agree with each other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.builders import hot_ps_job, job_body

PARALLEL = 20


@pytest.fixture(params=["postgresql", "sqlite"])
def api(request):
    """The API on each backend."""
    return request.getfixturevalue("client" if request.param == "postgresql" else "sqlite_client")


def _in_parallel(calls) -> list:
    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(lambda call: call(), calls))


def _statuses(api) -> list[str]:
    return [p["status"] for p in api.get("/api/v1/jobs/j/plans").json()]


def test_parallel_optimize_leaves_exactly_one_plan_proposed(api):
    hot_ps_job(api)
    optimize = lambda: api.post("/api/v1/jobs/j/optimize", json={"stage": "running"})  # noqa: E731
    responses = _in_parallel([optimize] * PARALLEL)
    assert [r.status_code for r in responses] == [200] * PARALLEL
    assert all(r.json()["migrate"] or r.json()["launch"] for r in responses)
    statuses = _statuses(api)
    assert len(statuses) == PARALLEL
    assert statuses.count("proposed") == 1
    assert statuses.count("superseded") == PARALLEL - 1
    assert statuses[0] == "proposed"  # the newest one


def test_parallel_oom_optimizes_store_one_plan_and_give_everyone_it(api):
    api.put("/api/v1/jobs/j", json=job_body(status="running"))
    api.put(
        "/api/v1/jobs/j/nodes/j-edljob-worker-0",
        json={"role": "worker", "cpu": 4, "memory_mib": 8192},
    )
    oom = [{"ts": "2026-03-01T00:10:00Z", "kind": "oom", "node": "j-edljob-worker-0"}]
    api.post("/api/v1/jobs/j/events", json=oom)
    body = {"stage": "oom", "node": "j-edljob-worker-0"}
    optimize = lambda: api.post("/api/v1/jobs/j/optimize", json=body)  # noqa: E731
    responses = _in_parallel([optimize] * PARALLEL)
    assert [r.status_code for r in responses] == [200] * PARALLEL
    assert len({r.json()["id"] for r in responses}) == 1
    assert responses[0].json()["migrate"][0]["memory_mib"] == 24576.0  # 3 x 8192, no sample
    assert len(_statuses(api)) == 1


def test_parallel_status_reports_agree(api):
    """Half report applied, half rejected: one of them wins, every 200 tells the same
    status, the others are 409 conflicts, and the plan keeps the winner's status."""
    hot_ps_job(api)
    plan = api.post("/api/v1/jobs/j/optimize", json={"stage": "running"}).json()
    url = f"/api/v1/jobs/j/plans/{plan['id']}/status"

    def report(status: str):
        return lambda: api.post(url, json={"status": status})

    responses = _in_parallel([report("applied"), report("rejected")] * (PARALLEL // 2))
    ok = [r.json()["status"] for r in responses if r.status_code == 200]
    conflicts = [r for r in responses if r.status_code == 409]
    assert len(ok) + len(conflicts) == PARALLEL
    assert len(set(ok)) == 1
    winner = ok[0]
    assert len(ok) == PARALLEL // 2  # every report of the winning status, none other
    assert api.get(f"/api/v1/jobs/j/plans/{plan['id']}").json()["status"] == winner
