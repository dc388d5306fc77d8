"""BRAIN_MAX_BODY_BYTES: 413 in the error envelope before the body is parsed."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from api.app import create_app
from api.schemas.jobs import EXIT_REASON_CHARS
from brain.config import Settings
from tests.builders import job_body

LIMIT = 4096


def test_default_limit_is_16_mib():
    assert Settings().max_body_bytes == 16 * 1024 * 1024


def test_a_body_over_the_limit_is_413_and_stores_nothing(settings):
    big = json.dumps(job_body(exit_reason="x" * LIMIT)).encode()
    small = json.dumps(job_body()).encode()
    assert len(small) < LIMIT < len(big)
    headers = {"content-type": "application/json"}
    with TestClient(create_app(settings.model_copy(update={"max_body_bytes": LIMIT}))) as client:
        declared = client.put("/api/v1/jobs/j1", content=big, headers=headers)

        def chunks():  # no Content-Length: counted as it streams in
            yield from (big[i : i + 1000] for i in range(0, len(big), 1000))

        streamed = client.put("/api/v1/jobs/j1", content=chunks(), headers=headers)
        for response in (declared, streamed):
            assert response.status_code == 413
            error = response.json()["error"]
            assert error["code"] == "payload_too_large"
            assert error["message"] == (
                f"the request body is larger than {LIMIT} bytes (BRAIN_MAX_BODY_BYTES)"
            )
        assert client.get("/api/v1/jobs/j1").status_code == 404
        assert client.put("/api/v1/jobs/j1", content=small, headers=headers).status_code == 201


def test_exit_reason_is_bounded(client):
    reason = "x" * EXIT_REASON_CHARS
    assert client.put("/api/v1/jobs/j1", json=job_body(exit_reason=reason)).status_code == 201
    too_long = reason + "x"
    for response in (
        client.put("/api/v1/jobs/j1", json=job_body(exit_reason=too_long)),
        client.patch("/api/v1/jobs/j1", json={"exit_reason": too_long}),
    ):
        assert response.status_code == 422
        assert response.json()["error"]["field"] == "exit_reason"
    assert client.get("/api/v1/jobs/j1").json()["exit_reason"] == reason


def test_a_50_mb_exit_reason_is_refused_before_parsing(client):
    body = json.dumps(job_body(exit_reason="x" * 50_000_000)).encode()
    response = client.put(
        "/api/v1/jobs/j1", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert client.get("/api/v1/jobs/j1").status_code == 404
