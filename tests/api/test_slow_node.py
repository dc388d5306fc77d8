"""Slow-node replacement through the API on PostgreSQL: step times pushed with the
samples, the running stage's slow_node optimizer, the plan and its evidence."""

from __future__ import annotations

import pytest

from tests.builders import job_body, node_point

WORKERS = 5
# worker-4 takes 2.0 s a mini-batch, the others 1.0 s: 2.0x the median of 1.0 s, MAD 0
STEP_TIME_S = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 2.0}


def _samples() -> list[dict]:
    # 12 points 30 s apart, 00:11:00 .. 00:16:30: 4 in each of the three 120 s windows
    # ending at the job's latest sample
    points = []
    for i in range(12):
        seconds = 660 + 30 * i
        ts = f"2026-03-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z"
        for w in range(WORKERS):
            name = f"j-edljob-worker-{w}"
            points.append(node_point(name, ts, 3.0, 4000, step_time_s=STEP_TIME_S[w]))
    return points


def test_a_straggler_is_replaced_on_a_fresh_node_of_its_size(client):
    roles = {"worker": {"count": WORKERS, "cpu": 4, "memory_mib": 8192}}
    client.put("/api/v1/jobs/j", json=job_body(roles=roles, status="running"))
    pushed = client.post("/api/v1/jobs/j/samples", json={"nodes": _samples()})
    assert pushed.json() == {"accepted": 60, "duplicates": 0}
    stored = client.get("/api/v1/jobs/j/samples?node=j-edljob-worker-4&limit=1").json()
    assert stored["nodes"][0]["step_time_s"] == 2.0

    plan = client.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": ["slow_node"]}
    ).json()
    assert plan["migrate"] == [
        {
            "role": "worker",
            "name": "j-edljob-worker-4",
            "cpu": 4.0,
            "memory_mib": 8192.0,
            "gpu": None,
        }
    ]
    why = [r for r in plan["reasons"] if r["optimizer"] == "slow_node"]
    assert why[0]["evidence"]["step_time_s"] == [2.0, 2.0, 2.0]
    assert why[0]["evidence"]["median_step_time_s"] == [1.0, 1.0, 1.0]
    assert why[0]["threshold"]["threshold"] == 1.5

    # applied now (the job clock): the node restarts, so its samples fall in its warmup,
    # and it cools down; the next running plan leaves it alone
    applied = client.post(f"/api/v1/jobs/j/plans/{plan['id']}/status", json={"status": "applied"})
    assert applied.status_code == 200
    again = client.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": ["slow_node"]}
    ).json()
    assert again["migrate"] == []


@pytest.mark.parametrize("bad", [0, -1.0, 7200.0])
def test_out_of_range_step_times_are_rejected(client, bad):
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    point = node_point("j-edljob-worker-0", "2026-03-01T00:00:00Z", 1.0, 100, step_time_s=bad)
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": [point]})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "nodes.0.step_time_s"
    assert client.get("/api/v1/jobs/j/samples").json()["nodes"] == []
