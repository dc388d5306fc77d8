"""GET /api/v1/portraits/jobs/{uid} and its nodes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brain.summaries import summarize_job
from tests.builders import flat_job, hand_job, recent_hour

approx = pytest.approx


@pytest.fixture
def hand(session):
    job = hand_job(session, t0=recent_hour())
    summarize_job(session, job)
    session.commit()
    return job


def test_job_portrait_summary_and_roles(client, hand):
    body = client.get("/api/v1/portraits/jobs/hand-1").json()

    summary = body["summary"]
    assert summary["final"] is True
    # Hand numbers of tests/summaries/test_compute.py.
    assert summary["hours"]["cpu"] == approx(
        {
            "requested_core_hours": 16,
            "used_core_hours": 9.5,
            "waste_core_hours": 6.5,
            "efficiency": 9.5 / 16,
        }
    )
    assert summary["hours"]["memory"]["waste_gib_hours"] == approx(20)
    assert summary["hours"]["gpu"]["used_gpu_hours"] == approx(0.75)
    assert summary["speed_per_worker_mean_steps_per_s"] == approx(10)
    assert summary["plans"][0]["speed_after_steps_per_s"] == 20
    assert [r["role"] for r in body["roles"]] == ["ps", "worker"]
    worker = body["roles"][1]
    assert worker["used"]["cpu_cores"] == approx({"mean": 5, "p50": 5, "p95": 7.5, "max": 8})
    assert (worker["oom_count"], worker["failure_count"]) == (1, 1)


def test_series_are_bucketed_to_the_points_asked(client, hand):
    t0 = hand.started_at
    series = client.get("/api/v1/portraits/jobs/hand-1", params={"points": 2}).json()["series"]

    # 10:00-11:00 in 2 buckets of 30 min; worker CPU 2, 4 | 6, 8, 4, 6; speed 10, 10 | 20, 20.
    assert series["bucket_seconds"] == approx(1800)
    worker = series["roles"]["worker"]
    assert worker["samples"] == [2, 4]
    assert worker["cpu_mean_cores"] == approx([3, 6])
    assert worker["cpu_max_cores"] == [4, 8]
    assert worker["ts"][1].startswith((t0 + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M"))
    # ps has no GPU: nulls, not zeros.
    assert series["roles"]["ps"]["gpu_util_mean"] == [None, None]
    assert series["speed"]["steps_per_sec_mean"] == [10, 20]
    assert series["speed"]["workers_max"] == [1, 2]

    full = client.get("/api/v1/portraits/jobs/hand-1").json()["series"]
    # Default 200 points: each worker sample time (:00, :20, :30, :40, :60) on its own.
    assert len(full["roles"]["worker"]["ts"]) == 5
    assert full["bucket_seconds"] == approx(3600 / 200)


def test_running_job_is_computed_on_the_fly(client, session):
    flat_job(session, "live", start=recent_hour(), cpu_request=4, cpu_used=1, status="running")
    session.commit()

    summary = client.get("/api/v1/portraits/jobs/live").json()["summary"]

    assert summary["final"] is False
    assert summary["hours"]["cpu"]["used_core_hours"] == approx(1)


def test_nodes_page(client, hand):
    first = client.get("/api/v1/portraits/jobs/hand-1/nodes", params={"limit": 2}).json()
    second = client.get(
        "/api/v1/portraits/jobs/hand-1/nodes", params={"limit": 2, "offset": first["next_offset"]}
    ).json()

    assert [n["name"] for n in first["items"]] == ["ps-0", "worker-0"]
    assert (first["total"], first["next_offset"]) == (3, 2)
    assert [n["name"] for n in second["items"]] == ["worker-1"]
    assert second["next_offset"] is None
    assert second["items"][0]["run_seconds"] == 1800
    assert second["items"][0]["hours"]["gpu"]["used_gpu_hours"] == approx(0.25)


def test_unknown_job_is_404(client):
    response = client.get("/api/v1/portraits/jobs/nope")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_a_job_finished_without_finished_at_ends_at_its_last_sample(client):
    """A past run pushed today and reported finished without ``finished_at``: its nodes are
    registered now, after their samples, and the portrait must still end at the last
    sample instead of counting the months up to the registration."""
    t0 = recent_hour() - timedelta(days=10)
    job = {
        "name": "ctr-train",
        "user": "alice",
        "roles": {"ps": {"count": 1, "cpu": 8, "memory_mib": 16384}},
    }
    assert client.put("/api/v1/jobs/late-1", json=job).status_code == 201
    points = [
        {"name": "late-1-ps-0", "role": "ps", "index": 0, "ts": ts, "cpu": 2, "memory_mib": 4096}
        for ts in (t0.isoformat(), (t0 + timedelta(hours=1)).isoformat())
    ]
    client.post("/api/v1/jobs/late-1/samples", json={"nodes": points}).raise_for_status()
    client.patch("/api/v1/jobs/late-1", json={"status": "succeeded"}).raise_for_status()

    body = client.get("/api/v1/portraits/jobs/late-1").json()
    node = client.get("/api/v1/portraits/jobs/late-1/nodes").json()["items"][0]

    # First to last sample: 1 h. Requested 8 cores x 1 h, 16 GiB x 1 h; used 2 x 1 h, 4 GiB x 1 h.
    assert body["summary"]["run_seconds"] == approx(3600)
    assert (node["run_seconds"], node["sampled_seconds"]) == approx((3600, 3600))
    assert body["summary"]["hours"]["cpu"]["requested_core_hours"] == approx(8)
    assert body["summary"]["hours"]["cpu"]["used_core_hours"] == approx(2)
    assert body["summary"]["hours"]["memory"]["requested_gib_hours"] == approx(16)
