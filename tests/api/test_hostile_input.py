"""Input the database would refuse (and answer with a bare 500) gets a 422 envelope naming
the field, and stores nothing."""

from __future__ import annotations

import base64
import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.exc import DataError
from sqlalchemy.exc import TimeoutError as PoolExhausted

from api.app import create_app
from brain.db.models import EventRow, JobRow, NodeRow, NodeSampleRow, ScalePlanRow, SpeedSampleRow
from tests.builders import job_body, node_point

TS = "2026-03-01T00:00:00Z"
INT32_OVER = 2**31  # one past PostgreSQL integer
INT64_OVER = 2**63  # one past PostgreSQL bigint
NAME_254 = "n" * 254  # the columns hold 253


def _counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            model.__tablename__: conn.scalar(select(func.count()).select_from(model))
            for model in (JobRow, NodeRow, NodeSampleRow, SpeedSampleRow, EventRow, ScalePlanRow)
        }


def _speed(**overrides) -> dict:
    return {"ts": TS, "global_step": 10, "steps_per_sec": 1.0, "workers": 2} | overrides


def _cursor(created: str, job_id: int) -> str:
    return base64.urlsafe_b64encode(f"{created}|{job_id}".encode()).decode().rstrip("=")


def _assert_rejected(response, field: str | None) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["message"]
    assert error["field"] == field, error


@pytest.fixture
def job_j1(client, db):
    assert client.put("/api/v1/jobs/j1", json={"name": "x", "user": "u"}).status_code == 201
    return _counts(db)


BODY_CASES = [
    # integers beyond their column
    (
        "post",
        "/samples",
        {"nodes": [node_point("j1-ps-0", TS, 1, 1) | {"index": INT32_OVER}]},
        "nodes.0.index",
    ),
    ("post", "/samples", {"speed": [_speed(workers=INT32_OVER)]}, "speed.0.workers"),
    ("post", "/samples", {"speed": [_speed(global_step=INT64_OVER)]}, "speed.0.global_step"),
    ("put", "", job_body(total_steps=INT64_OVER), "total_steps"),
    # NUL characters
    ("put", "", job_body(name="a\u0000b"), "name"),
    ("put", "", job_body(exit_reason="oom\u0000"), "exit_reason"),
    ("patch", "", {"exit_reason": "a\u0000b"}, "exit_reason"),
    ("post", "/events", [{"ts": TS, "kind": "oom", "node": "a\u0000b"}], "0.node"),
    (
        "post",
        "/samples",
        {"nodes": [node_point("j1-ps-0", TS, 1, 1) | {"name": "p\u0000s"}]},
        "nodes.0.name",
    ),
    # dates that overflow when converted to UTC
    (
        "post",
        "/samples",
        {"nodes": [node_point("j1-ps-0", "0001-01-01T00:00:00+05:00", 1, 1)]},
        "nodes.0.ts",
    ),
    ("post", "/samples", {"speed": [_speed(ts="9999-12-31T23:59:59-05:00")]}, "speed.0.ts"),
    ("post", "/events", [{"ts": "0001-01-01T00:00:00+05:00", "kind": "oom"}], "0.ts"),
    ("put", "", job_body(started_at="9999-12-31T23:59:59-05:00"), "started_at"),
    ("patch", "", {"finished_at": "0001-01-01T00:00:00+05:00"}, "finished_at"),
    # names longer than the column
    (
        "post",
        "/samples",
        {"nodes": [node_point("j1-ps-0", TS, 1, 1) | {"name": NAME_254}]},
        "nodes.0.name",
    ),
    ("post", "/events", [{"ts": TS, "kind": "oom", "node": NAME_254}], "0.node"),
    # a status cannot be null
    ("patch", "", {"status": None}, "status"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BODY_CASES)
def test_bodies_beyond_the_store_are_422_and_store_nothing(
    client, db, job_j1, method, path, body, field
):
    response = client.request(method, f"/api/v1/jobs/j1{path}", json=body)
    _assert_rejected(response, field)
    assert _counts(db) == job_j1
    assert client.get("/api/v1/jobs/j1").json()["name"] == "x"


QUERY_CASES = [
    ("/api/v1/jobs/j1/plans/2147483648", "plan_id"),
    ("/api/v1/jobs/j1/plans/latest?after=2147483648", "after"),
    ("/api/v1/jobs/j1/plans?before=-6774123420", "before"),
    (f"/api/v1/jobs?cursor={_cursor('2026-03-01T00:00:00+00:00', INT32_OVER)}", "cursor"),
    (f"/api/v1/jobs?cursor={_cursor('0001-01-01T00:00:00+05:00', 1)}", "cursor"),
    ("/api/v1/portraits?offset=9223372036854775808", "offset"),
    ("/api/v1/portraits/users/u?offset=9223372036854775808", "offset"),
    ("/api/v1/portraits/groups/u/x?offset=9223372036854775808", "offset"),
    ("/api/v1/portraits/jobs/j1/nodes?offset=9223372036854775808", "offset"),
    ("/api/v1/jobs?user=a%00b", "user"),
    ("/api/v1/jobs?group=%00%3B", "group"),
    ("/api/v1/jobs/j1/samples?node=a%00b", "node"),
    ("/api/v1/jobs/j1/events?node=a%00b", "node"),
    ("/api/v1/suggestions?user=a%00b", "user"),
    ("/api/v1/portraits/users/a%00b", "user"),
    ("/api/v1/jobs/j1/samples?start=0001-01-01T00:00:00%2B05:00", "start"),
    ("/api/v1/jobs/j1/samples?end=9999-12-31T23:59:59-05:00", "end"),
    ("/api/v1/jobs/nul%00x", "uid"),
    (f"/api/v1/jobs/{NAME_254}", "uid"),
    (f"/api/v1/jobs/j1/nodes/{NAME_254}", "name"),
]


@pytest.mark.parametrize(("url", "field"), QUERY_CASES)
def test_paths_and_queries_beyond_the_store_are_422(client, job_j1, url, field):
    method = "put" if url.endswith(NAME_254) or "%00x" in url else "get"
    body = {"role": "ps"} if "/nodes/" in url else job_body() if method == "put" else None
    _assert_rejected(client.request(method, url, json=body), field)


def test_a_uid_or_node_name_of_254_characters_is_refused_on_sqlite(sqlite_client):
    """SQLite ignores VARCHAR lengths: the schema is what keeps the 253 limit there."""
    _assert_rejected(sqlite_client.put(f"/api/v1/jobs/{NAME_254}", json=job_body()), "uid")
    assert sqlite_client.put("/api/v1/jobs/j1", json=job_body()).status_code == 201
    batch = {"nodes": [node_point("j1-ps-0", TS, 1, 1) | {"name": NAME_254}]}
    _assert_rejected(sqlite_client.post("/api/v1/jobs/j1/samples", json=batch), "nodes.0.name")
    assert sqlite_client.get("/api/v1/jobs/j1/nodes").json() == []


def test_253_characters_fit(client, db):
    uid = "u" * 253
    assert client.put(f"/api/v1/jobs/{uid}", json=job_body()).status_code == 201
    batch = {"nodes": [node_point("j-ps-0", TS, 1, 1) | {"name": "n" * 253}]}
    assert client.post(f"/api/v1/jobs/{uid}/samples", json=batch).json()["accepted"] == 1


def test_largest_column_integers_fit(client, db):
    body = job_body(total_steps=2**63 - 1)
    assert client.put("/api/v1/jobs/j1", json=body).json()["total_steps"] == 2**63 - 1
    batch = {
        "nodes": [node_point("j1-ps-0", TS, 1, 1) | {"index": 2**31 - 1}],
        "speed": [_speed(global_step=2**63 - 1)],
    }
    assert client.post("/api/v1/jobs/j1/samples", json=batch).json()["accepted"] == 2
    assert client.get("/api/v1/jobs/j1/plans/2147483647").status_code == 404


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
def test_non_finite_json_numbers_are_refused_while_parsing(client, db, constant):
    """Python's parser accepts these non-JSON constants; Brain does not, anywhere."""
    body = {"name": "x", "user": "u", "roles": {"worker": {"count": 1, "cpu": "X"}}}
    raw = json.dumps(body).replace('"X"', constant).encode()
    response = client.put(
        "/api/v1/jobs/j1", content=raw, headers={"content-type": "application/json"}
    )
    _assert_rejected(response, None)
    assert constant in response.json()["error"]["message"]
    assert _counts(db)["jobs"] == 0


def test_a_value_the_database_refuses_is_a_422_envelope(settings):
    """Any bound the schema misses still ends as a 422, never a bare 500."""
    app = create_app(settings)

    def refused() -> None:
        raise DataError("INSERT ...", {}, Exception("value too long for type varchar(253)\nx"))

    app.add_api_route("/refused", refused)
    with TestClient(app) as client:
        response = client.get("/refused")
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "invalid",
        "message": "the database refused a value: value too long for type varchar(253)",
        "field": None,
    }


def test_busy_connections_are_a_503_envelope_to_retry(settings):
    """Under overload the pool times out: the caller is told to retry, not sent a 500."""
    app = create_app(settings)

    def busy() -> None:
        raise PoolExhausted("QueuePool limit of size 10 overflow 10 reached")

    app.add_api_route("/busy", busy)
    with TestClient(app) as client:
        response = client.get("/busy")
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["code"] == "overloaded"


def test_a_body_that_is_not_utf8_is_a_422_envelope(client, db):
    response = client.put(
        "/api/v1/jobs/j1", content=b"\xff\xfe{", headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert "not UTF-8" in response.json()["error"]["message"]
