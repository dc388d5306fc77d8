"""GET /api/v1/jobs?format=csv: the same page as CSV, the next cursor in a header."""

from __future__ import annotations

import csv
import io

from tests.builders import job_body


def rows(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.text)))


def test_the_jobs_list_pages_as_csv_like_its_json(client):
    for n, user in enumerate(("alice", "bob", "carol")):
        body = job_body(user=user, started_at=f"2026-11-0{n + 1}T10:00:00Z")
        assert client.put(f"/api/v1/jobs/run-{n}", json=body).status_code == 201
    first = client.get("/api/v1/jobs", params={"format": "csv", "limit": 2})
    page = rows(first)
    as_json = client.get("/api/v1/jobs", params={"limit": 2}).json()
    assert [r["uid"] for r in page] == [j["uid"] for j in as_json["items"]] == ["run-2", "run-1"]
    assert page[0]["user"] == "carol" and page[0]["strategy"] == "ps"
    assert page[0]["status"] == as_json["items"][0]["status"]
    assert page[0]["started_at"] == "2026-11-03T10:00:00Z"
    assert page[0]["namespace"] == "" and page[0]["total_steps"] == "100000"
    cursor = first.headers["x-next-cursor"]
    assert cursor == as_json["next_cursor"]
    last = client.get("/api/v1/jobs", params={"format": "csv", "limit": 2, "cursor": cursor})
    assert [r["uid"] for r in rows(last)] == ["run-0"]
    assert "x-next-cursor" not in last.headers


def test_a_format_it_does_not_speak_is_a_422_naming_format(client):
    response = client.get("/api/v1/jobs", params={"format": "xml"})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "format" and "'json' or 'csv'" in error["message"]
