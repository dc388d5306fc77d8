"""Priority from utilization: scores and classes worked out by hand from flat jobs.

flat_job: one node, 1024 MiB requested and 512 MiB used (memory efficiency 0.5), CPU
request and use as given, GPU-hours gpu × hours requested and gpu_util × that used.
"""

from __future__ import annotations

import pytest

from brain.config import PrioritySettings
from brain.portraits.jobs import Totals
from brain.portraits.priorities import PriorityClass, priority_of
from brain.summaries import summarize_job
from brain.summaries.hours import Hours
from tests.builders import add_event, at, flat_job, recent_hour

approx = pytest.approx

# uid: user, cpu request, cpu used, hours, gpus, gpu utilization
JOBS = {
    # alice: CPU 22 core-h requested, 9 used (0.409); memory 0.5; GPU 2 requested,
    # 0.5 used (0.25): efficiency (0.409 + 0.5 + 0.25) / 3 = 0.386 -> normal.
    "a1": ("alice", 8, 2, 2, 0, None),
    "a2": ("alice", 4, 4, 1, 0, None),
    "a3": ("alice", 2, 1, 1, 2, 0.25),
    # bob: CPU 48 requested, 3 used (0.0625); memory 0.5: (0.0625 + 0.5) / 2 = 0.281 -> low.
    "b1": ("bob", 16, 1, 1, 0, None),
    "b2": ("bob", 16, 1, 1, 0, None),
    "b3": ("bob", 16, 1, 1, 0, None),
    # carol: CPU 1.0, memory 0.5: efficiency 0.75; one OOM in 3 jobs:
    # 0.75 − 0.5 × 1/3 = 0.583 -> normal (high without the OOM).
    "c1": ("carol", 2, 2, 1, 0, None),
    "c2": ("carol", 2, 2, 1, 0, None),
    "c3": ("carol", 2, 2, 1, 0, None),
    # dave: one job, fewer than priority_min_jobs (3): not judged.
    "d1": ("dave", 8, 1, 1, 0, None),
}


@pytest.fixture
def history(session):
    start = recent_hour(2)
    for uid, (user, cpu, used, hours, gpu, util) in JOBS.items():
        job = flat_job(
            session,
            uid,
            start=start,
            cpu_request=cpu,
            cpu_used=used,
            hours=hours,
            gpu=gpu,
            gpu_util=util,
            user=user,
            group_key=f"{user}/team",
        )
        if uid == "c1":
            add_event(session, job, at(start, 30), "oom", "worker-0")
        summarize_job(session, job)
    session.commit()


def test_priorities_by_user_lowest_score_first(client, history):
    body = client.get("/api/v1/priorities", params={"by": "user", "days": 30}).json()

    assert [row["key"] for row in body["items"]] == ["bob", "alice", "carol", "dave"]
    bob, alice, carol, dave = (row["priority"] for row in body["items"])
    assert bob["score"] == approx((3 / 48 + 0.5) / 2)
    assert bob["priority_class"] == "low"
    assert alice["score"] == approx((9 / 22 + 0.5 + 0.25) / 3)
    assert alice["priority_class"] == "normal"
    assert carol["efficiency"] == approx(0.75)
    assert carol["oom_rate"] == approx(1 / 3)
    assert carol["score"] == approx(0.75 - 0.5 / 3)
    assert carol["priority_class"] == "normal"
    assert "priority_high_from 0.6" in carol["reason"]
    assert dave["score"] is None and dave["priority_class"] == "normal"
    assert "priority_min_jobs 3" in dave["reason"]
    assert body["total"] == 4 and body["next_offset"] is None


def test_priorities_filter_page_and_groups(client, history):
    low = client.get("/api/v1/priorities", params={"priority_class": "low"}).json()
    assert [row["key"] for row in low["items"]] == ["bob"]

    page = client.get("/api/v1/priorities", params={"limit": 2}).json()
    assert [row["key"] for row in page["items"]] == ["bob", "alice"]
    assert page["next_offset"] == 2

    groups = client.get("/api/v1/priorities", params={"by": "group"}).json()
    assert [row["key"] for row in groups["items"]][:2] == ["bob/team", "alice/team"]


def test_user_portrait_shows_priority(client, history):
    body = client.get("/api/v1/portraits/users/bob").json()
    assert body["priority"]["priority_class"] == "low"
    assert body["priority"]["score"] == approx(0.28125)


def test_thresholds_are_settings():
    # Efficiency 0.75 with no OOM in 3 jobs: high by default, normal when high needs 0.8.
    totals = Totals(
        jobs=3,
        succeeded=3,
        failed=0,
        stopped=0,
        running=0,
        run_seconds=3 * 3600,
        hours=Hours(
            requested_core_hours=3, used_core_hours=3, requested_gib_hours=3, used_gib_hours=1.5
        ),
    )
    assert priority_of(totals, PrioritySettings()).priority_class == PriorityClass.high
    strict = PrioritySettings(priority_high_from=0.8)
    assert priority_of(totals, strict).priority_class == PriorityClass.normal
    with pytest.raises(ValueError, match="must not exceed"):
        PrioritySettings(priority_low_below=0.7, priority_high_from=0.6)


def test_bad_query_names_the_field(client):
    response = client.get("/api/v1/priorities", params={"by": "dataset"})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "by"
