"""Registering, updating, reading and listing jobs on PostgreSQL."""

from __future__ import annotations

from tests.builders import job_body


def test_put_creates_then_updates_idempotently(client):
    first = client.put("/api/v1/jobs/job-1", json=job_body())
    assert first.status_code == 201
    again = client.put("/api/v1/jobs/job-1", json=job_body())
    assert again.status_code == 200
    assert again.json()["created_at"] == first.json()["created_at"]

    changed = client.put("/api/v1/jobs/job-1", json=job_body(total_steps=5000, gpu_type="A100"))
    assert changed.status_code == 200
    got = client.get("/api/v1/jobs/job-1").json()
    assert got["total_steps"] == 5000
    assert got["gpu_type"] == "A100"
    assert got["group_key"] == "alice/ctr-train"  # user/name by default
    assert got["roles"]["ps"] == {
        "count": 2,
        "cpu": 8.0,
        "memory_mib": 16384.0,
        "gpu": 0.0,
        "min_count": None,
        "max_count": None,
    }
    assert got["limits"] == {"cpu": 64.0, "memory_mib": 262144.0, "gpu": None}
    assert len(client.get("/api/v1/jobs").json()["items"]) == 1


def test_get_unknown_job_is_404_with_error_body(client):
    response = client.get("/api/v1/jobs/nope")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "no job with uid 'nope'", "field": "uid"}
    }


def test_patch_status_and_times(client):
    client.put("/api/v1/jobs/j", json=job_body())
    response = client.patch(
        "/api/v1/jobs/j",
        json={"status": "running", "started_at": "2026-01-01T10:00:00+02:00"},
    )
    assert response.status_code == 200
    assert response.json()["status"] == "running"
    assert response.json()["started_at"] == "2026-01-01T08:00:00Z"

    bad = client.patch("/api/v1/jobs/j", json={"finished_at": "2026-01-01T07:00:00Z"})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "finished_at"
    assert client.get("/api/v1/jobs/j").json()["finished_at"] is None


def test_patch_rejects_unknown_fields_and_empty_bodies(client):
    client.put("/api/v1/jobs/j", json=job_body())
    assert client.patch("/api/v1/jobs/j", json={"name": "x"}).json()["error"]["field"] == "name"
    assert client.patch("/api/v1/jobs/j", json={}).status_code == 422


def test_list_filters_and_paginates_newest_first(client):
    for i in range(7):
        created = f"2026-01-0{i + 1}T00:00:00Z"
        user = "alice" if i % 2 == 0 else "bob"
        client.put(f"/api/v1/jobs/j{i}", json=job_body(user=user, created_at=created))

    page1 = client.get("/api/v1/jobs", params={"limit": 3}).json()
    assert [j["uid"] for j in page1["items"]] == ["j6", "j5", "j4"]
    page2 = client.get("/api/v1/jobs", params={"limit": 3, "cursor": page1["next_cursor"]}).json()
    assert [j["uid"] for j in page2["items"]] == ["j3", "j2", "j1"]
    page3 = client.get("/api/v1/jobs", params={"limit": 3, "cursor": page2["next_cursor"]}).json()
    assert [j["uid"] for j in page3["items"]] == ["j0"]
    assert page3["next_cursor"] is None

    alice = client.get("/api/v1/jobs", params={"user": "alice"}).json()["items"]
    assert [j["uid"] for j in alice] == ["j6", "j4", "j2", "j0"]
    assert client.get("/api/v1/jobs", params={"status": "running"}).json()["items"] == []


def test_same_created_at_pages_without_loss_or_repeat(client):
    for i in range(5):
        client.put(f"/api/v1/jobs/t{i}", json=job_body(created_at="2026-02-01T00:00:00Z"))
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/v1/jobs", params=params).json()
        seen += [j["uid"] for j in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"t{i}" for i in range(5)]
    assert len(seen) == 5


def test_bad_cursor_and_bad_filters(client):
    bad = client.get("/api/v1/jobs", params={"cursor": "garbage!!"})
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "cursor"
    assert client.get("/api/v1/jobs", params={"status": "sleeping"}).json()["error"]["field"] == (
        "status"
    )
    assert client.get("/api/v1/jobs", params={"limit": 0}).json()["error"]["field"] == "limit"
