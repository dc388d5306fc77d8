"""API tokens on REST: 401/403 envelopes, each scope, namespaces (404 for others'
jobs), the loopback default, public paths, and the OpenAPI security scheme."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.app import create_app
from api.state import server_state
from brain.client import BrainClient, BrainError, JobRegistration, RoleRequest
from brain.config import Settings
from brain.db.engine import make_session_factory
from brain.db.models import JobRow
from brain.domain import utcnow
from brain.services.tokens import revoke_token
from tests.builders import bearer, job_body, node_point


def start(settings: Settings, **overrides) -> TestClient:
    return TestClient(create_app(settings.model_copy(update=overrides)))


CLUSTER_PUSH = {"source": "volcano", "nodes": 40, "free_cpu": 12.5, "pending_cpu": 48}


def jobs_stored(client: TestClient) -> int:
    with server_state(client.app).session_factory() as session:
        return session.scalar(select(func.count()).select_from(JobRow))


def test_loopback_with_no_token_is_open_and_says_so(settings, caplog):
    with caplog.at_level(logging.WARNING, logger="api.app"), start(settings) as client:
        assert client.put("/api/v1/jobs/j1", json=job_body()).status_code == 201
        auth = client.get("/readyz").json()["checks"]["auth"]
    assert auth["status"] == "open"
    assert "loopback" in auth["detail"] and "brain token create" in auth["detail"]
    assert "API authentication is off" in caplog.text


def test_missing_or_bad_token_is_401_in_the_envelope(secured):
    for headers in ({}, bearer("brain_not-a-token"), {"Authorization": "Basic dTpw"}):
        response = secured.put("/api/v1/jobs/j1", json=job_body(), headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthorized"
        assert secured.get("/api/v1/jobs", headers=headers).status_code == 401
    assert jobs_stored(secured) == 0
    assert secured.get("/readyz").json()["checks"]["auth"]["status"] == "enforced"


def test_read_scope_reads_and_cannot_write(secured, tokens):
    write, read = bearer(tokens["write"]), bearer(tokens["read"])
    assert secured.put("/api/v1/jobs/j1", json=job_body(), headers=write).status_code == 201
    assert secured.get("/api/v1/jobs/j1", headers=read).json()["uid"] == "j1"
    assert secured.get("/api/v1/jobs", headers=read).status_code == 200
    assert secured.get("/api/v1/suggestions?user=alice&name=x", headers=read).status_code == 200
    assert secured.get("/api/v1/portraits?by=user", headers=read).status_code == 200
    for method, path, body in [
        ("PUT", "/api/v1/jobs/j2", job_body()),
        ("PATCH", "/api/v1/jobs/j1", {"status": "running"}),
        ("POST", "/api/v1/jobs/j1/optimize", {"stage": "create"}),
        ("POST", "/api/v1/jobs/j1/events", []),
    ]:
        response = secured.request(method, path, json=body, headers=read)
        assert response.status_code == 403, (method, path)
        error = response.json()["error"]
        assert error["code"] == "forbidden"
        assert error["message"] == f"token 'read-token' has scope read; {method} needs write"
    assert jobs_stored(secured) == 1
    assert secured.get("/api/v1/jobs/j1", headers=read).json()["status"] == "pending"


def test_write_and_admin_scopes_write(secured, tokens):
    for scope in ("write", "admin"):
        headers, uid = bearer(tokens[scope]), f"job-{scope}"
        assert (
            secured.put(f"/api/v1/jobs/{uid}", json=job_body(), headers=headers).status_code == 201
        )
        point = node_point(f"{uid}-ps-0", "2026-03-01T00:00:00Z", 1.5, 1024)
        pushed = secured.post(
            f"/api/v1/jobs/{uid}/samples", json={"nodes": [point]}, headers=headers
        )
        assert pushed.json() == {"accepted": 1, "duplicates": 0}
        plan = secured.post(
            f"/api/v1/jobs/{uid}/optimize", json={"stage": "create"}, headers=headers
        )
        assert plan.status_code == 200
        status = {"status": "applied", "message": "ok"}
        path = f"/api/v1/jobs/{uid}/plans/{plan.json()['id']}/status"
        assert secured.post(path, json=status, headers=headers).json()["status"] == "applied"
        assert secured.get(f"/api/v1/jobs/{uid}/samples", headers=headers).status_code == 200
    assert jobs_stored(secured) == 2


def test_revoked_and_expired_tokens_are_refused(settings, make_token, db):
    # made a minute ago to last 59 seconds: expired since
    a_minute_ago = utcnow() - timedelta(minutes=1)
    old = make_token(
        "old", "write", expires_at=a_minute_ago + timedelta(seconds=59), now=a_minute_ago
    )
    gone = make_token("gone", "write")
    kept = make_token("kept", "read")
    with make_session_factory(db)() as session:
        revoke_token(session, "gone")
        session.commit()
    with start(settings) as client:
        for secret in (old, gone):
            response = client.get("/api/v1/jobs", headers=bearer(secret))
            assert response.status_code == 401
            assert response.json()["error"]["message"] == "the token is unknown, expired or revoked"
        assert client.get("/api/v1/jobs", headers=bearer(kept)).status_code == 200


def test_namespace_restricted_token_sees_only_its_namespaces(settings, make_token):
    admin = bearer(make_token("admin", "admin"))
    ml = bearer(make_token("ml-master", "write", namespaces=["ml"]))
    with start(settings) as client:
        for uid, namespace in (("j-ml", "ml"), ("j-other", "other"), ("j-none", None)):
            body = job_body(namespace=namespace) if namespace else job_body()
            assert client.put(f"/api/v1/jobs/{uid}", json=body, headers=admin).status_code == 201

        listed = client.get("/api/v1/jobs", headers=ml).json()["items"]
        assert [job["uid"] for job in listed] == ["j-ml"]
        assert client.get("/api/v1/jobs/j-ml/samples", headers=ml).status_code == 200

        # Another namespace's job answers exactly as a job that does not exist (and a PUT
        # on it as on a new uid: tests/api/test_tenancy.py).
        missing = client.get("/api/v1/jobs/nope", headers=ml)
        for uid in ("j-other", "j-none"):
            for method, path, body in [
                ("GET", f"/api/v1/jobs/{uid}", None),
                ("PATCH", f"/api/v1/jobs/{uid}", {"status": "failed"}),
                ("GET", f"/api/v1/jobs/{uid}/samples", None),
                ("POST", f"/api/v1/jobs/{uid}/optimize", {"stage": "create"}),
                ("GET", f"/api/v1/jobs/{uid}/plans", None),
                ("GET", f"/api/v1/portraits/jobs/{uid}", None),
            ]:
                response = client.request(method, path, json=body, headers=ml)
                assert response.status_code == 404, (method, path)
                expected = missing.json()["error"]["message"].replace("nope", uid)
                assert response.json()["error"] == {**missing.json()["error"], "message": expected}
        assert client.get("/api/v1/jobs/j-other", headers=admin).json()["status"] == "pending"

        # It creates jobs only in its namespaces; aggregates over every namespace are refused.
        created = client.put("/api/v1/jobs/j-new", json=job_body(namespace="ml"), headers=ml)
        assert created.status_code == 201
        outside = client.put("/api/v1/jobs/j-out", json=job_body(namespace="other"), headers=ml)
        assert outside.status_code == 403
        assert outside.json()["error"]["field"] == "namespace"
        moved = client.put("/api/v1/jobs/j-ml", json=job_body(namespace="other"), headers=ml)
        assert moved.status_code == 403
        for path in (
            "/api/v1/portraits?by=user",
            "/api/v1/portraits/users/alice",
            "/api/v1/portraits/groups/alice/ctr-train",
            "/api/v1/suggestions?user=alice&name=ctr-train",
        ):
            response = client.get(path, headers=ml)
            assert response.status_code == 403, path
            assert "spans every namespace" in response.json()["error"]["message"]
        assert jobs_stored(client) == 4


def test_pushing_the_cluster_state_needs_a_write_token_for_every_namespace(settings, make_token):
    read = bearer(make_token("reader", "read"))
    write = bearer(make_token("scheduler", "write"))
    ml = bearer(make_token("ml-master", "write", namespaces=["ml"]))
    path = "/api/v1/cluster/state"
    with start(settings) as client:
        assert client.post(path, json=CLUSTER_PUSH).status_code == 401
        assert client.post(path, json=CLUSTER_PUSH, headers=read).status_code == 403
        # The state steers every job's plans: a namespace-limited token may not set it.
        limited = client.post(path, json=CLUSTER_PUSH, headers=ml)
        assert limited.status_code == 403
        assert client.get(path, headers=read).status_code == 404
        assert client.post(path, json=CLUSTER_PUSH, headers=write).status_code == 200
        assert client.get(path, headers=read).json()["free_cpu"] == 12.5


def test_health_and_metrics_are_public_unless_configured(settings, tokens):
    with start(settings) as client:
        for path in ("/healthz", "/readyz", "/metrics", "/docs", "/openapi.json"):
            assert client.get(path).status_code == 200, path
    with start(settings, auth_public_paths=["/healthz"]) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers=bearer(tokens["read"])).status_code == 200


def test_beyond_loopback_without_tokens_nothing_is_open(settings):
    with start(settings, host="0.0.0.0") as client:
        assert client.get("/api/v1/jobs").status_code == 401
        assert client.get("/readyz").json()["checks"]["auth"]["status"] == "enforced"
    with start(settings, host="0.0.0.0", auth="disabled") as client:
        assert client.put("/api/v1/jobs/j1", json=job_body()).status_code == 201
        assert "BRAIN_AUTH=disabled" in client.get("/readyz").json()["checks"]["auth"]["detail"]


def test_required_mode_needs_tokens_even_on_loopback(settings):
    with start(settings, auth="required") as client:
        assert client.get("/api/v1/jobs").status_code == 401


def test_openapi_shows_the_security_scheme_and_401_403(secured):
    spec = secured.get("/openapi.json").json()
    scheme = spec["components"]["securitySchemes"]["BearerToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    put_job = spec["paths"]["/api/v1/jobs/{uid}"]["put"]
    assert put_job["security"] == [{"BearerToken": []}]
    assert {"401", "403", "413"} <= set(put_job["responses"])
    assert "security" not in spec["paths"]["/healthz"]["get"]
    assert "security" not in spec["paths"]["/readyz"]["get"]


def test_the_reference_client_sends_its_token(secured, make_token):
    job = JobRegistration(name="ctr", user="alice", roles={"ps": RoleRequest(count=1)})
    with pytest.raises(BrainError) as refused:
        BrainClient(http=secured).register_job("ctr-1", job)
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")

    reader = BrainClient(http=secured, token=make_token("reader", "read"))
    with pytest.raises(BrainError) as too_small:
        reader.register_job("ctr-1", job)
    assert (too_small.value.status, too_small.value.code) == (403, "forbidden")

    writer = BrainClient(http=secured, token=make_token("master", "write"))
    writer.register_job("ctr-1", job)
    assert writer.plans("ctr-1") == []
