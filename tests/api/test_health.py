"""Liveness, readiness (also with the database down) and the service's own metrics."""

from __future__ import annotations

import logging
import os
import time

import psycopg
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from api.app import create_app
from brain.config import Settings
from brain.services import samples
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


def test_a_database_error_is_logged_with_its_cause_and_answered_503(client, monkeypatch, caplog):
    """A statement the database refuses as a whole (as PostgreSQL's 65,535-parameter limit
    did) is a 503 for the caller and a log line with the driver's error and where it
    happened for the operator; it was a silent 503 before."""
    cause = psycopg.OperationalError("number of parameters must be between 0 and 65535")

    def refused(*_args, **_kwargs):
        raise OperationalError("INSERT INTO nodes ...", {}, cause)

    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    monkeypatch.setattr(samples, "ingest", refused)
    batch = {"nodes": [node_point("j-ps-0", "2026-03-01T00:00:00Z", 1, 1)]}
    with caplog.at_level(logging.ERROR, logger="api.errors"):
        answer = client.post("/api/v1/jobs/j/samples", json=batch)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "database_unavailable"
    [record] = [r for r in caplog.records if r.name == "api.errors"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "POST '/api/v1/jobs/j/samples': database error, answered 503"
    assert record.exc_info[1] is cause
    assert "refused" in caplog.text  # the traceback names the call that failed
