"""Values that would poison later reads once stored: non-finite numbers, implausible
quantities and timestamps before the floor are refused at the edge, and what a site
configures moves the bounds."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.app import create_app
from api.schemas.samples import NodePointIn
from brain.config import Settings
from brain.db.models import JobRow, NodeSampleRow, SpeedSampleRow
from tests.builders import job_body, node_point

TS = "2026-03-01T00:00:00Z"


def _count(engine, model) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(model))


def _post_raw(client, url: str, raw: str):
    return client.post(url, content=raw.encode(), headers={"content-type": "application/json"})


def _with_constant(body: dict, constant: str) -> str:
    """JSON text with the placeholder string "X" replaced by a bare constant."""
    return json.dumps(body).replace('"X"', constant)


@pytest.mark.parametrize(
    "raw",
    [
        _with_constant({"nodes": [node_point("j-ps-0", TS, "X", 1)]}, "Infinity"),
        _with_constant({"nodes": [node_point("j-ps-0", TS, 1, "X")]}, "NaN"),
        _with_constant(
            {"speed": [{"ts": TS, "global_step": 1, "steps_per_sec": "X", "workers": 1}]},
            "Infinity",
        ),
    ],
)
def test_infinity_and_nan_in_samples_are_refused(client, db, raw):
    client.put("/api/v1/jobs/j", json=job_body())
    response = _post_raw(client, "/api/v1/jobs/j/samples", raw)
    assert response.status_code == 422
    assert _count(db, NodeSampleRow) + _count(db, SpeedSampleRow) == 0


def test_infinity_in_limits_and_node_gpu_is_refused(client, db):
    raw = '{"name": "x", "user": "u", "limits": {"cpu": Infinity}}'
    response = client.put(
        "/api/v1/jobs/j", content=raw.encode(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert _count(db, JobRow) == 0
    client.put("/api/v1/jobs/j", json=job_body())
    raw = '{"role": "worker", "gpu": Infinity}'
    response = client.put(
        "/api/v1/jobs/j/nodes/w0",
        content=raw.encode(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422
    assert client.get("/api/v1/jobs/j/nodes").json() == []


def test_the_models_refuse_non_finite_values_from_any_source():
    """Bodies never carry them (the parser refuses), but the models hold the rule too."""
    point = node_point("j-ps-0", TS, 1.0, 1.0)
    for field in ("cpu", "memory_mib", "gpu_util", "gpu_memory_mib"):
        with pytest.raises(ValueError, match=field):
            NodePointIn.model_validate(point | {field: math.inf})


def test_1e308_is_refused_and_reads_stay_sound(client, db):
    """1e308 cores used to overflow avg() and make the portrait and optimize 500."""
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    for field in ("cpu", "memory_mib"):
        bad = node_point("j-ps-0", TS, 1.0, 1.0) | {field: 1e308}
        response = client.post("/api/v1/jobs/j/samples", json={"nodes": [bad]})
        assert response.status_code == 422
        assert response.json()["error"]["field"] == f"nodes.0.{field}"
    good = [node_point("j-ps-0", TS, 2.0, 1024.0)]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": good}).status_code == 200
    assert client.get("/api/v1/portraits/jobs/j").status_code == 200
    assert client.post("/api/v1/jobs/j/optimize", json={"stage": "running"}).status_code == 200


@pytest.mark.parametrize(
    ("field", "largest"),
    [("cpu", 1024), ("memory_mib", 16 * 1024 * 1024)],
)
def test_default_plausible_bounds_are_inclusive(client, db, field, largest):
    client.put("/api/v1/jobs/j", json=job_body())
    at = node_point("j-ps-0", TS, 1.0, 1.0) | {field: largest}
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": [at]}).status_code == 200
    above = node_point("j-ps-0", "2026-03-01T00:00:15Z", 1.0, 1.0) | {field: largest * 1.001}
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": [above]})
    assert response.status_code == 422


def test_job_limits_may_reach_plausible_node_times_plausible_nodes(client, db):
    """Default 1024 cores x 100,000 nodes = 102,400,000 cores for a whole job."""
    ok = client.put("/api/v1/jobs/j", json=job_body(limits={"cpu": 102_400_000}))
    assert ok.status_code == 201
    too_many = client.put("/api/v1/jobs/j", json=job_body(limits={"cpu": 102_400_001}))
    assert too_many.status_code == 422
    assert too_many.json()["error"]["field"] == "limits.cpu"
    roles = {"worker": {"count": 100_001, "cpu": 1}}
    response = client.put("/api/v1/jobs/j", json=job_body(roles=roles))
    assert response.json()["error"]["field"] == "roles.worker.count"


def test_a_site_raises_its_bounds_by_settings(pg_url, db):
    settings = Settings(database_url=pg_url, plausible_cpu=4096, plausible_steps_per_sec=1e8)
    with TestClient(create_app(settings)) as client:
        client.put("/api/v1/jobs/j", json=job_body())
        batch = {
            "nodes": [node_point("j-ps-0", TS, 2048.0, 1.0)],
            "speed": [{"ts": TS, "global_step": 1, "steps_per_sec": 5e7, "workers": 1}],
        }
        assert client.post("/api/v1/jobs/j/samples", json=batch).json()["accepted"] == 2


def test_a_sample_at_year_1_is_refused(client, db):
    """It used to be stored and the job portrait reported 35.5 million core-hours."""
    client.put("/api/v1/jobs/j", json=job_body())
    old = [node_point("j-ps-0", "0001-01-01T00:00:00Z", 1.0, 1.0)]
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": old})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "nodes.0.ts"
    assert "BRAIN_MIN_TIMESTAMP" in response.json()["error"]["message"]
    assert _count(db, NodeSampleRow) == 0


def test_the_timestamp_floor_is_2000_by_default_and_a_setting(client, db, pg_url):
    client.put("/api/v1/jobs/j", json=job_body())
    before = [node_point("j-ps-0", "1999-12-31T23:59:59Z", 1.0, 1.0)]
    at = [node_point("j-ps-0", "2000-01-01T00:00:00Z", 1.0, 1.0)]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": before}).status_code == 422
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": at}).status_code == 200
    assert (
        client.put("/api/v1/jobs/k", json=job_body(created_at="1999-01-01T00:00:00Z")).json()[
            "error"
        ]["field"]
        == "created_at"
    )
    settings = Settings(database_url=pg_url, min_timestamp="1990-01-01T00:00:00Z")
    with TestClient(create_app(settings)) as site:
        assert site.post("/api/v1/jobs/j/samples", json={"nodes": before}).status_code == 200


def test_a_node_registered_in_the_future_is_refused(client, db):
    client.put("/api/v1/jobs/j", json=job_body())
    response = client.put(
        "/api/v1/jobs/j/nodes/w0", json={"role": "worker", "created_at": "2999-01-01T00:00:00Z"}
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "created_at"
