"""Bad input gets a 4xx naming the field, and changes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from brain.db.models import EventRow, JobRow, NodeRow, NodeSampleRow, SpeedSampleRow
from tests.builders import job_body, node_point

TS = "2026-03-01T00:00:00Z"


def _counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            model.__tablename__: conn.scalar(select(func.count()).select_from(model))
            for model in (JobRow, NodeRow, NodeSampleRow, SpeedSampleRow, EventRow)
        }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (job_body(user=""), "user"),
        (job_body(strategy="gossip"), "strategy"),
        (job_body(limits={"cpu": -1}), "limits.cpu"),
        (job_body(roles={"ps": {"count": -1}}), "roles.ps.count"),
        (job_body(roles={"ps": {"count": 1, "memory_mib": "lots"}}), "roles.ps.memory_mib"),
        (job_body(created_at="yesterday"), "created_at"),
        (job_body(created_at="2026-01-01T00:00:00"), "created_at"),
        (job_body(started_at="2999-01-01T00:00:00Z"), "started_at"),
        (job_body(unknown=1), "unknown"),
    ],
)
def test_bad_job_is_rejected_and_not_stored(client, db, body, field):
    response = client.put("/api/v1/jobs/j", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field
    assert error["message"]
    assert _counts(db)["jobs"] == 0


@pytest.mark.parametrize(
    ("point", "field"),
    [
        ({"cpu": -0.5}, "nodes.1.cpu"),
        ({"memory_mib": -1}, "nodes.1.memory_mib"),
        ({"gpu_util": 1.5}, "nodes.1.gpu_util"),
        ({"ts": "2026-03-01 00:00:15"}, "nodes.1.ts"),
        ({"ts": "2999-01-01T00:00:00Z"}, "nodes.1.ts"),
        ({"name": ""}, "nodes.1.name"),
    ],
)
def test_one_bad_point_rejects_the_whole_batch(client, db, point, field):
    client.put("/api/v1/jobs/j", json=job_body())
    before = _counts(db)
    good = node_point("j-ps-0", TS, 1.0, 100.0)
    bad = node_point("j-ps-1", "2026-03-01T00:00:15Z", 1.0, 100.0) | point
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": [good, bad]})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == field
    assert _counts(db) == before


def test_samples_for_unknown_job_are_404_and_store_nothing(client, db):
    response = client.post(
        "/api/v1/jobs/ghost/samples", json={"nodes": [node_point("g-ps-0", TS, 1, 1)]}
    )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert _counts(db)["node_samples"] == 0


def test_batch_limit_is_10000_points(client, db):
    client.put("/api/v1/jobs/j", json=job_body())
    nodes = [
        node_point(
            f"j-worker-{i % 50}", f"2026-03-01T{i // 3000:02d}:{(i // 50) % 60:02d}:00Z", 1.0, 10.0
        )
        for i in range(9_999)
    ]
    speed = [{"ts": TS, "global_step": 1, "steps_per_sec": 1.0, "workers": 1}]
    accepted = client.post("/api/v1/jobs/j/samples", json={"nodes": nodes, "speed": speed})
    assert accepted.status_code == 200
    assert accepted.json()["accepted"] + accepted.json()["duplicates"] == 10_000

    too_many = nodes + [node_point("j-worker-0", "2026-03-02T00:00:00Z", 1, 1)]
    rejected = client.post("/api/v1/jobs/j/samples", json={"nodes": too_many, "speed": speed})
    assert rejected.status_code == 413
    assert "10001 points" in rejected.json()["error"]["message"]
    assert _counts(db)["node_samples"] == accepted.json()["accepted"] - 1


def test_event_for_unknown_node_rejects_the_list(client, db):
    client.put("/api/v1/jobs/j", json=job_body())
    events = [
        {"ts": TS, "kind": "started"},
        {"ts": TS, "kind": "oom", "node": "no-such-node"},
    ]
    response = client.post("/api/v1/jobs/j/events", json=events)
    assert response.status_code == 404
    assert response.json()["error"]["field"] == "1.node"
    assert _counts(db)["events"] == 0


def test_event_kind_is_checked(client, db):
    client.put("/api/v1/jobs/j", json=job_body())
    response = client.post("/api/v1/jobs/j/events", json=[{"ts": TS, "kind": "exploded"}])
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "0.kind"


def test_malformed_json_is_422(client):
    response = client.put(
        "/api/v1/jobs/j", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "validation_error"


@pytest.mark.parametrize(
    ("content_type", "said"),
    [
        (None, "the body was sent without a content-type header"),
        (
            "application/x-www-form-urlencoded",
            "the body was sent as application/x-www-form-urlencoded",
        ),
        ("text/plain; charset=utf-8", "the body was sent as text/plain"),
    ],
)
def test_a_json_body_without_the_json_header_is_told_so(client, db, content_type, said):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    before = _counts(db)
    headers = {} if content_type is None else {"content-type": content_type}
    response = client.patch("/api/v1/jobs/j", content=b'{"status": "succeeded"}', headers=headers)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "content-type"
    assert error["message"].startswith(said)
    assert "content-type: application/json" in error["message"]
    assert client.get("/api/v1/jobs/j").json()["status"] == "pending"
    assert _counts(db) == before


def test_a_bad_status_names_the_field_and_the_allowed_values(client, db):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    allowed = "'pending', 'running', 'succeeded', 'failed' or 'stopped'"
    patched = client.patch("/api/v1/jobs/j", json={"status": "exploded"}).json()["error"]
    assert patched["field"] == "status"
    assert patched["message"] == f"status: 'exploded' is not allowed; allowed values: {allowed}"
    listed = client.get("/api/v1/jobs", params={"status": "exploded"}).json()["error"]
    assert (listed["field"], listed["message"].split(";")[0]) == (
        "status",
        "status: 'exploded' is not allowed",
    )


def test_a_wrapped_list_is_told_to_send_the_bare_list(client, db):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    event = {"ts": TS, "kind": "oom"}
    wrapped = client.post("/api/v1/jobs/j/events", json={"events": [event]})
    assert wrapped.status_code == 422
    message = wrapped.json()["error"]["message"]
    assert message.startswith("the body must be a JSON array, not an object (keys 'events')")
    assert "send the list itself" in message
    listed = client.post("/api/v1/jobs/j/samples", json=[event]).json()["error"]["message"]
    assert listed == "the body must be a JSON object, {...}, not an array"
    assert _counts(db)["events"] == 0
