"""Events: stored once each, listed with filters."""

from __future__ import annotations

from tests.builders import job_body, node_point


def test_events_round_trip_and_retry(client):
    client.put("/api/v1/jobs/j", json=job_body())
    client.post(
        "/api/v1/jobs/j/samples",
        json={"nodes": [node_point("j-ps-0", "2026-03-01T00:00:00Z", 1, 1)]},
    )
    events = [
        {"ts": "2026-03-01T00:00:00Z", "kind": "started"},
        {"ts": "2026-03-01T00:05:00Z", "kind": "oom", "node": "j-ps-0", "detail": "exit 137"},
    ]
    assert client.post("/api/v1/jobs/j/events", json=events).json() == {
        "accepted": 2,
        "duplicates": 0,
    }
    assert client.post("/api/v1/jobs/j/events", json=events).json() == {
        "accepted": 0,
        "duplicates": 2,
    }

    listed = client.get("/api/v1/jobs/j/events").json()
    assert [(e["kind"], e["node"], e["detail"]) for e in listed] == [
        ("started", None, None),
        ("oom", "j-ps-0", "exit 137"),
    ]
    assert [
        e["kind"] for e in client.get("/api/v1/jobs/j/events", params={"kind": "oom"}).json()
    ] == ["oom"]
    assert client.get("/api/v1/jobs/j/events", params={"node": "j-ps-0"}).json()[0]["ts"] == (
        "2026-03-01T00:05:00Z"
    )


def _finished_run(client, uid: str) -> str:
    """A run of ``uid`` finished and summarized an hour after it started; its end."""
    from datetime import timedelta

    from tests.builders import recent_hour, record_run

    start = recent_hour()
    usage = {f"{uid}-edljob-worker-0": (3.0, 7000.0)}
    roles = {"worker": {"count": 1, "cpu": 4, "memory_mib": 8192}}
    record_run(
        client,
        uid,
        job_body(roles=roles),
        usage,
        start=start,
        sample_minutes=(0, 30, 60),
        finished_minutes=60,
    )
    return (start + timedelta(minutes=60)).isoformat()


def test_an_oom_recorded_after_the_finish_counts_in_the_summary(client):
    end = _finished_run(client, "late")
    summary = client.get("/api/v1/portraits/jobs/late").json()["summary"]
    assert summary["oom_count"] == 0

    oom = [{"ts": end, "kind": "oom", "node": "late-edljob-worker-0", "detail": "exit 137"}]
    assert client.post("/api/v1/jobs/late/events", json=oom).json()["accepted"] == 1

    summary = client.get("/api/v1/portraits/jobs/late").json()["summary"]
    assert (summary["oom_count"], summary["failure_count"]) == (1, 0)
    assert "OOM kills 1 ·" in client.get("/ui/jobs/late").text
    # A retry stores nothing and counts nothing twice; a failure counts as one.
    client.post("/api/v1/jobs/late/events", json=oom)
    client.post("/api/v1/jobs/late/events", json=[{"ts": end, "kind": "failed"}])
    summary = client.get("/api/v1/portraits/jobs/late").json()["summary"]
    assert (summary["oom_count"], summary["failure_count"]) == (1, 1)


def test_a_late_oom_counts_on_a_summary_kept_after_retention(client, session):
    from sqlalchemy import delete, select

    from brain.db.models import JobRow, JobSummaryRow, NodeSampleRow
    from brain.summaries import summarize_job

    end = _finished_run(client, "aged")
    job = session.scalars(select(JobRow).where(JobRow.uid == "aged")).one()
    # Retention aged out the first point: 2 of the 3 the summary was computed from remain.
    first = session.scalars(select(NodeSampleRow.ts).where(NodeSampleRow.job_id == job.id)).all()
    session.execute(delete(NodeSampleRow).where(NodeSampleRow.ts == min(first)))
    session.commit()
    oom = [{"ts": end, "kind": "oom", "node": "aged-edljob-worker-0"}]
    assert client.post("/api/v1/jobs/aged/events", json=oom).json()["accepted"] == 1

    session.expire_all()
    kept = session.get(JobSummaryRow, job.id)
    assert (kept.samples, kept.oom_count) == (3, 1)
    summarize_job(session, session.get(JobRow, job.id))  # again: still kept, still counted
    assert (session.get(JobSummaryRow, job.id).samples, kept.oom_count) == (3, 1)
