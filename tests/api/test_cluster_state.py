"""POST /api/v1/cluster/state: a platform without Prometheus pushes free capacity and
pending demand; stored like the collector's state (one row per source), bounded by the
schema, written only with a write token for every namespace."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import func, select

from api.state import server_state
from brain.db.models import ClusterStateRow
from brain.domain import utcnow

PUSH = {
    "source": "volcano",
    "ts": "2026-11-23T20:00:00Z",
    "nodes": 40,
    "free_cpu": 12.5,
    "free_memory_mib": 65536,
    "free_gpu": 0,
    "pending_pods": 6,
    "pending_cpu": 48,
    "pending_memory_mib": 196608,
    "pending_gpu": 4,
    "queued_jobs": 3,
}


def _rows(client) -> int:
    with server_state(client.app).session_factory() as session:
        return session.scalar(select(func.count()).select_from(ClusterStateRow))


def test_a_push_is_stored_and_served_and_replaces_its_source_only(client):
    assert client.get("/api/v1/cluster/state").status_code == 404
    pushed = client.post("/api/v1/cluster/state", json=PUSH)
    assert pushed.status_code == 200, pushed.text
    expected = {**PUSH, "free_memory_mib": 65536.0, "free_gpu": 0.0, "pending_cpu": 48.0}
    expected |= {"pending_memory_mib": 196608.0, "pending_gpu": 4.0}
    assert pushed.json() == expected
    assert client.get("/api/v1/cluster/state").json() == expected

    # The same source again replaces its row; omitted values are unknown, not 0.
    later = {"source": "volcano", "ts": "2026-11-23T20:05:00Z", "nodes": 40, "free_cpu": 30}
    assert client.post("/api/v1/cluster/state", json=later).status_code == 200
    served = client.get("/api/v1/cluster/state").json()
    assert served["ts"] == "2026-11-23T20:05:00Z"
    assert served["free_cpu"] == 30.0
    assert served["pending_cpu"] is None and served["queued_jobs"] is None
    assert _rows(client) == 1

    # Another source adds its own row; the freshest of any source is served.
    older = {**PUSH, "source": "slurm", "ts": "2026-11-23T19:00:00Z"}
    assert client.post("/api/v1/cluster/state", json=older).status_code == 200
    assert _rows(client) == 2
    assert client.get("/api/v1/cluster/state").json()["source"] == "volcano"


def test_ts_defaults_to_now_and_source_to_push(client):
    before = utcnow()
    body = client.post("/api/v1/cluster/state", json={"nodes": 3, "pending_cpu": 2}).json()
    assert body["source"] == "push"

    ts = datetime.fromisoformat(body["ts"].replace("Z", "+00:00"))
    assert before - timedelta(seconds=1) <= ts <= utcnow()
    assert body["free_cpu"] is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"free_cpu": -1}, "free_cpu"),
        ({"pending_gpu": "NaN"}, "pending_gpu"),
        ({"free_memory_mib": 1e300}, "free_memory_mib"),
        # the plausible bound: 1024 cores x 100,000 nodes by default
        ({"pending_cpu": 1024 * 100_000 + 1}, "pending_cpu"),
        ({"pending_pods": -2}, "pending_pods"),
        ({"queued_jobs": 2**31}, "queued_jobs"),
        ({"nodes": None}, "nodes"),
        ({"source": "prometheus"}, "source"),
        ({"source": "Bad Source"}, "source"),
        ({"ts": "2026-11-23T20:00:00"}, "ts"),
        ({"ts": (utcnow() + timedelta(hours=1)).isoformat()}, "ts"),
        ({"free_gpus": 3}, "free_gpus"),
    ],
)
def test_bad_pushes_are_422_naming_the_field_and_store_nothing(client, change, field):
    response = client.post("/api/v1/cluster/state", json={**PUSH, **change})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    assert _rows(client) == 0


def test_a_push_without_any_amount_is_refused(client):
    response = client.post("/api/v1/cluster/state", json={"nodes": 4, "queued_jobs": 2})
    assert response.status_code == 422
    assert "at least one free_* or pending_*" in response.json()["error"]["message"]
    assert _rows(client) == 0
