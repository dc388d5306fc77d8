"""Per-role min_count / max_count through the API on PostgreSQL: registered, checked,
returned, and no plan leaves them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.builders import job_body, node_point

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat()


def _put(client, **worker):
    roles = {
        "ps": {"count": 1, "cpu": 4, "memory_mib": 8192},
        "worker": {"count": 1, "cpu": 4, "memory_mib": 8192, **worker},
    }
    body = job_body(roles=roles, status="running", started_at=_ts(0))
    return client.put("/api/v1/jobs/j", json=body)


def test_bounds_are_registered_and_returned(client):
    assert _put(client, min_count=1, max_count=8).status_code == 201
    roles = client.get("/api/v1/jobs/j").json()["roles"]
    assert roles["worker"] == {
        "count": 1,
        "cpu": 4,
        "memory_mib": 8192,
        "gpu": 0,
        "min_count": 1,
        "max_count": 8,
    }
    assert roles["ps"]["min_count"] is None and roles["ps"]["max_count"] is None


@pytest.mark.parametrize(
    ("bounds", "field", "message"),
    [
        ({"min_count": 2}, "roles.worker.min_count", "min_count 2 is above count 1"),
        ({"max_count": 0}, "roles.worker.max_count", "max_count 0 is below count 1"),
        ({"min_count": -1}, "roles.worker.min_count", "greater than or equal to 0"),
    ],
)
def test_bounds_that_contradict_the_count_are_refused(client, bounds, field, message):
    response = _put(client, **bounds)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field
    assert message in error["message"]
    assert client.get("/api/v1/jobs/j").status_code == 404


def test_the_estimate_is_clipped_to_max_count_and_applying_it_keeps_it(client):
    _put(client, max_count=8)
    # worker 0 trains alone at 2 cores, the PS uses 1: as in the closed-loop test the
    # estimate sizes 21 workers of 2.0 cores within the 64-core limit; max_count makes it 8
    points = [
        node_point(name, _ts(15 * i), cpu, 4000)
        for i in range(13)
        for name, cpu in (("j-edljob-worker-0", 2.0), ("j-edljob-ps-0", 1.0))
    ]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": points}).status_code == 200
    plan = client.post("/api/v1/jobs/j/optimize", json={"stage": "estimate"}).json()
    assert plan["roles"]["worker"]["count"] == 8
    clip = next(r for r in plan["reasons"] if r["message"].startswith("clipped"))
    assert clip["optimizer"] == "guard"
    assert clip["message"] == "clipped worker.count from 21 to 8: the job's max_count is 8"
    assert clip["threshold"] == {"max_count": 8}
    status = client.post(
        f"/api/v1/jobs/j/plans/{plan['id']}/status",
        json={"status": "applied", "applied_at": _ts(200)},
    )
    assert status.status_code == 200
    # the desired state takes the clipped count; the bounds stay as registered
    worker = client.get("/api/v1/jobs/j").json()["roles"]["worker"]
    assert (worker["count"], worker["max_count"]) == (8, 8)
