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
