"""Events: stored once each, listed with filters."""

from __future__ import annotations

import re
from datetime import timedelta

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

    from brain.db.models import JobRow, JobSummaryRow, NodeSampleRow, NodeSummaryRow, RoleSummaryRow
    from brain.summaries import summarize_job
    from brain.summaries.store import jobs_to_summarize

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
    role = session.get(RoleSummaryRow, (job.id, "worker"))
    node = session.scalars(select(NodeSummaryRow).where(NodeSummaryRow.job_id == job.id)).one()
    assert (role.samples, role.oom_count, node.oom_count) == (3, 1, 1)
    # Current again: the refresher has nothing left to do for it.
    assert job.id not in jobs_to_summarize(session)


def _oom_cells(html: str) -> dict[str, str]:
    """The job page's per-role OOM column: the last cell of each role's row."""
    rows = html.split('data-table="roles"')[1].split("</table>")[0]
    return dict(re.findall(r'<tr data-role="([^"]+)">.*?<td>([^<]*)</td></tr>', rows, re.S))


def test_per_role_oom_counts_survive_retention_and_take_late_kills(
    client, session, session_factory
):
    """hand-1 (tests.builders): one OOM kill of worker-1, one failure of worker-0. Its raw
    samples are aged out; the summary keeps the per-role counts, and a kill of worker-0
    recorded afterwards counts on the job, on the worker role and on its node."""
    from sqlalchemy import func, select

    from brain.db.models import NodeSampleRow
    from brain.summaries.refresher import refresh_once
    from tests.builders import hand_job, recent_hour

    hand_job(session, t0=recent_hour(days_ago=3))
    session.commit()
    factory = session_factory
    # Summarized, then every raw sample (3 days old) deleted by a 1-day retention.
    assert refresh_once(factory, retention_days=1) == 1
    assert session.scalar(select(func.count()).select_from(NodeSampleRow)) == 0

    def shown() -> tuple[int, dict[str, int], dict[str, str]]:
        found = client.get("/api/v1/portraits/jobs/hand-1").json()
        roles = {r["role"]: r["oom_count"] for r in found["roles"]}
        return found["summary"]["oom_count"], roles, _oom_cells(client.get("/ui/jobs/hand-1").text)

    assert shown() == (1, {"ps": 0, "worker": 1}, {"ps": "0", "worker": "1"})
    assert refresh_once(factory, retention_days=1) == 0  # nothing stale: nothing changes
    assert shown() == (1, {"ps": 0, "worker": 1}, {"ps": "0", "worker": "1"})

    end = (recent_hour(days_ago=3) + timedelta(minutes=60)).isoformat()
    late = [{"ts": end, "kind": "oom", "node": "worker-0"}]
    assert client.post("/api/v1/jobs/hand-1/events", json=late).json()["accepted"] == 1
    assert shown() == (2, {"ps": 0, "worker": 2}, {"ps": "0", "worker": "2"})
    assert "OOM kills 2 ·" in client.get("/ui/jobs/hand-1").text
