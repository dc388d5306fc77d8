"""User and group portraits, and the ranking."""

from __future__ import annotations

import pytest

from brain.summaries import summarize_job
from tests.builders import flat_job, recent_hour

approx = pytest.approx

# uid: user, group, cpu request, cpu used, hours, gpus, gpu utilization, status
JOBS = {
    "a1": ("alice", "alice/resnet", 8, 2, 2, 0, None, "succeeded"),
    "a2": ("alice", "alice/resnet", 4, 4, 1, 0, None, "failed"),
    "a3": ("alice", "vision/shared", 2, 1, 1, 2, 0.25, "succeeded"),
    "b1": ("bob", "vision/shared", 16, 4, 1, 0, None, "succeeded"),
    "c1": ("carol", "carol/bert", 1, 1, 1, 1, 0.5, "succeeded"),
}


@pytest.fixture
def history(session):
    for uid, (user, group, cpu, used, hours, gpu, util, status) in JOBS.items():
        job = flat_job(
            session,
            uid,
            start=recent_hour(2),
            cpu_request=cpu,
            cpu_used=used,
            hours=hours,
            gpu=gpu,
            gpu_util=util,
            status=status,
            user=user,
            group_key=group,
        )
        summarize_job(session, job)
    old = flat_job(
        session, "a-old", start=recent_hour(60), cpu_request=64, cpu_used=0, user="alice"
    )
    summarize_job(session, old)
    session.commit()


def test_user_portrait_totals(client, history):
    body = client.get("/api/v1/portraits/users/alice", params={"days": 30}).json()

    totals = body["totals"]
    # a1, a2, a3 (a-old ended 60 days ago); a2 failed.
    assert (totals["jobs"], totals["succeeded"], totals["failed"]) == (3, 2, 1)
    assert totals["success_rate"] == approx(2 / 3)
    assert totals["run_hours"] == approx(4)
    # Requested 8x2 + 4x1 + 2x1 = 22 core-h; used 2x2 + 4 + 1 = 9.
    assert totals["hours"]["cpu"]["requested_core_hours"] == approx(22)
    assert totals["hours"]["cpu"]["waste_core_hours"] == approx(13)
    # 1 GiB x 4 h requested, 0.5 GiB x 4 h used.
    assert totals["hours"]["memory"]["used_gib_hours"] == approx(2)
    # a3: 2 GPUs x 1 h requested; utilization 0.25 x 2 x 1 h = 0.5 used.
    assert totals["hours"]["gpu"]["requested_gpu_hours"] == approx(2)
    assert totals["hours"]["gpu"]["efficiency"] == approx(0.25)
    # Score: mean of CPU 9/22, memory 0.5, GPU 0.25.
    assert totals["hours"]["efficiency_score"] == approx((9 / 22 + 0.5 + 0.25) / 3)


def test_user_portrait_most_wasteful_jobs(client, history):
    by_gpu = client.get("/api/v1/portraits/users/alice", params={"top": 2}).json()
    by_cpu = client.get("/api/v1/portraits/users/alice", params={"sort": "cpu"}).json()
    page2 = client.get("/api/v1/portraits/users/alice", params={"top": 2, "offset": 2}).json()

    # GPU waste: a3 1.5 GPU-h, others 0 (ties by CPU waste: a1 12, a2 0).
    assert [j["uid"] for j in by_gpu["wasteful_jobs"]["items"]] == ["a3", "a1"]
    assert by_gpu["wasteful_jobs"]["next_offset"] == 2
    assert [j["uid"] for j in page2["wasteful_jobs"]["items"]] == ["a2"]
    # CPU waste: a1 12, a3 1, a2 0.
    assert [j["uid"] for j in by_cpu["wasteful_jobs"]["items"]] == ["a1", "a3", "a2"]


def test_user_portrait_totals_are_over_every_job_on_any_page(client, history):
    def portrait(**params):
        return client.get("/api/v1/portraits/users/alice", params=params).json()

    # The totals ride along with the page's rows, or come on their own past the end.
    for body in (portrait(top=1), portrait(top=2, offset=2), portrait(offset=10)):
        assert body["totals"]["jobs"] == 3
        assert body["totals"]["hours"]["cpu"]["waste_core_hours"] == approx(13)
        assert body["wasteful_jobs"]["total"] == 3
    assert portrait(offset=10)["wasteful_jobs"]["items"] == []


def test_group_portrait_with_a_slash_in_the_key(client, history):
    body = client.get("/api/v1/portraits/groups/vision/shared").json()

    assert (body["owner"], body["key"]) == ("group", "vision/shared")
    assert body["totals"]["jobs"] == 2
    # a3 2 - 1 = 1 and b1 16 - 4 = 12 core-h wasted.
    assert body["totals"]["hours"]["cpu"]["waste_core_hours"] == approx(13)


def test_unknown_user_gets_zeros(client, history):
    totals = client.get("/api/v1/portraits/users/nobody").json()["totals"]

    assert totals["jobs"] == 0
    assert totals["success_rate"] is None
    assert totals["hours"]["efficiency_score"] is None


def test_ranking_most_waste_first(client, history):
    by_cpu = client.get("/api/v1/portraits", params={"by": "user", "sort": "cpu"}).json()
    by_gpu = client.get("/api/v1/portraits", params={"by": "user", "top": 2}).json()
    groups = client.get("/api/v1/portraits", params={"by": "group", "sort": "cpu"}).json()

    # CPU waste: alice 13, bob 12, carol 0.
    assert [
        (r["key"], r["totals"]["hours"]["cpu"]["waste_core_hours"]) for r in by_cpu["items"]
    ] == [
        ("alice", approx(13)),
        ("bob", approx(12)),
        ("carol", approx(0)),
    ]
    # GPU waste: alice 1.5, carol 0.5, bob 0.
    assert [r["key"] for r in by_gpu["items"]] == ["alice", "carol"]
    assert (by_gpu["total"], by_gpu["next_offset"]) == (3, 2)
    # vision/shared 13, alice/resnet 12, carol/bert 0.
    assert [r["key"] for r in groups["items"]] == ["vision/shared", "alice/resnet", "carol/bert"]


def test_ranking_counts_every_key_on_any_page(client, history):
    def page(**params):
        body = client.get("/api/v1/portraits", params={"by": "user", **params}).json()
        return [r["key"] for r in body["items"]], body["total"], body["next_offset"]

    # alice, carol, bob by GPU waste: the count comes with the page's rows, or on its own
    # for a page past the end.
    assert page(top=1, offset=2) == (["bob"], 3, None)
    assert page(top=2, offset=5) == ([], 3, None)


def test_ranking_of_nothing_counts_nothing(client):
    body = client.get("/api/v1/portraits", params={"by": "dataset"}).json()

    assert (body["items"], body["total"], body["next_offset"]) == ([], 0, None)


def test_ranking_rejects_an_unknown_key(client):
    response = client.get("/api/v1/portraits", params={"by": "planet"})

    assert response.status_code == 422
    assert response.json()["error"]["field"] == "by"
