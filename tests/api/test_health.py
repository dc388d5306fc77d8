"""Liveness, readiness (also with the database down) and the service's own metrics."""

from __future__ import annotations

import os
import time

from fastapi.testclient import TestClient

from api.app import create_app
from brain.config import Settings
from tests.builders import job_body, node_point
from tests.ports import free_port


def test_ready_when_database_answers(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"] == {"status": "ok"}


def test_not_ready_when_database_is_down():
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/none?connect_timeout=2"
    with TestClient(create_app(Settings(database_url=url))) as down:
        assert down.get("/healthz").status_code == 200
        ready = down.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"]["status"] == "down"
        data = down.get("/api/v1/jobs")
        assert data.status_code == 503
        assert data.json()["error"]["code"] == "database_unavailable"


def test_metrics_count_requests_and_ingested_points(client):
    client.put("/api/v1/jobs/j", json=job_body())
    batch = {"nodes": [node_point("j-ps-0", "2026-03-01T00:00:00Z", 1, 1)]}
    client.post("/api/v1/jobs/j/samples", json=batch)
    client.post("/api/v1/jobs/j/samples", json=batch)
    text = client.get("/metrics").text
    assert 'brain_ingested_points_total{outcome="stored",source="api"} 1.0' in text
    assert 'brain_ingested_points_total{outcome="duplicate",source="api"} 1.0' in text
    route = 'route="/api/v1/jobs/{uid}/samples"'
    assert f'brain_http_requests_total{{method="POST",{route},status="200"}} 2.0' in text
    assert "brain_http_request_duration_seconds_bucket" in text


def test_openapi_documents_units_and_routes(client):
    spec = client.get("/openapi.json").json()
    assert "/api/v1/jobs/{uid}/samples" in spec["paths"]
    point = spec["components"]["schemas"]["NodePointIn"]["properties"]
    assert point["memory_mib"]["description"].startswith("Memory used, MiB.")
    assert client.get("/docs").status_code == 200


def test_readyz_says_whether_this_process_leads_the_background_work(client):
    def leadership() -> dict:
        return client.get("/readyz").json()["checks"]["leadership"]

    # The only process on its database takes the lock at its first attempt.
    deadline = time.monotonic() + 10
    while not leadership()["detail"]["leader"]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert leadership() == {"status": "ok", "detail": {"leader": True, "pid": os.getpid()}}
