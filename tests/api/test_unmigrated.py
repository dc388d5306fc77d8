"""A database that was never migrated: `brain serve` refuses to start, and an app
serving it anyway answers 503 ``schema_out_of_date`` naming the command to run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.schema_guard import SchemaGate
from api.state import server_state
from brain.config import Settings
from brain.db import migrate
from tests.builders import job_body
from tests.ports import free_port


@pytest.fixture(params=["postgresql", "sqlite"])
def never_migrated(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return request.getfixturevalue("make_pg_database")()


def test_api_answers_503_envelopes_until_the_database_is_migrated(never_migrated):
    head = migrate.head_revision(never_migrated)
    with TestClient(create_app(Settings(database_url=never_migrated))) as client:
        for method, path, body in [
            ("GET", "/api/v1/jobs", None),
            ("PUT", "/api/v1/jobs/j1", job_body()),
            ("GET", "/api/v1/suggestions?user=u&name=n", None),
        ]:
            response = client.request(method, path, json=body)
            assert response.status_code == 503, (path, response.text)
            error = response.json()["error"]
            assert error["code"] == "schema_out_of_date"
            assert "never migrated" in error["message"] and head in error["message"]
            assert "`brain db upgrade`" in error["message"]
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503
        schema = ready.json()["checks"]["schema"]
        assert (schema["status"], schema["applied"], schema["head"]) == ("out_of_date", None, head)
        assert "`brain db upgrade`" in schema["detail"]

        # Migrating while it waits brings it up without a restart (re-checked each call here).
        server_state(client.app).schema_gate = SchemaGate(
            server_state(client.app).engine, head, recheck_s=0
        )
        migrate.upgrade(never_migrated)
        assert client.put("/api/v1/jobs/j1", json=job_body()).status_code == 201
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready"
        assert ready["checks"]["schema"] == {"status": "ok", "applied": head, "head": head}


def test_brain_serve_refuses_to_start_on_a_never_migrated_database(make_pg_database):
    url = make_pg_database()
    env = {**os.environ, "BRAIN_DATABASE_URL": url}
    result = subprocess.run(
        [sys.executable, "-m", "api.main", "serve", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1
    assert "not starting" in result.stderr
    assert "never migrated" in result.stderr and "`brain db upgrade`" in result.stderr
