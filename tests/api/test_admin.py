"""Admin routes: tokens and retention over HTTP, only for unrestricted admin tokens."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.app import create_app
from brain.db.models import NodeSampleRow
from brain.domain import utcnow
from tests.builders import add_node, add_points, bearer, make_job


def test_only_an_unrestricted_admin_token_manages_tokens(secured, tokens, make_token):
    ml_admin = make_token("ml-admin", "admin", namespaces=["ml"])
    for secret in (tokens["read"], tokens["write"], ml_admin):
        listed = secured.get("/api/v1/tokens", headers=bearer(secret))
        assert listed.status_code == 403
        assert listed.json()["error"]["code"] == "forbidden"
        made = secured.post(
            "/api/v1/tokens", json={"name": "x", "scope": "read"}, headers=bearer(secret)
        )
        assert made.status_code == 403
    assert secured.get("/api/v1/tokens").status_code == 401

    admin = bearer(tokens["admin"])
    names = [t["name"] for t in secured.get("/api/v1/tokens", headers=admin).json()]
    assert names == ["read-token", "write-token", "admin-token", "ml-admin"]


def test_a_token_made_over_http_works_and_stops_when_revoked(secured, tokens):
    admin = bearer(tokens["admin"])
    body = {"name": "master-7", "scope": "write", "namespaces": ["ml"]}
    made = secured.post("/api/v1/tokens", json=body, headers=admin)
    assert made.status_code == 201
    new = made.json()
    assert new["secret"].startswith(new["prefix"]) and new["scope"] == "write"
    assert new["namespaces"] == ["ml"] and new["revoked_at"] is None
    assert "secret" not in secured.get("/api/v1/tokens", headers=admin).json()[-1]

    job = {"name": "n", "user": "u", "namespace": "ml"}
    assert secured.put("/api/v1/jobs/j", json=job, headers=bearer(new["secret"])).status_code == 201
    missing = secured.post("/api/v1/tokens", headers=admin)
    assert missing.status_code == 422
    assert missing.json()["error"] == {
        "code": "validation_error",
        "message": "a JSON body is required",
        "field": None,
    }
    again = secured.post("/api/v1/tokens", json=body, headers=admin)
    assert again.status_code == 409 and again.json()["error"]["field"] == "name"

    revoked = secured.delete("/api/v1/tokens/master-7", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    # The cache is dropped on commit: the very next request with it is refused.
    assert secured.put("/api/v1/jobs/j", json=job, headers=bearer(new["secret"])).status_code == 401
    assert secured.delete("/api/v1/tokens/nobody", headers=admin).status_code == 404


def test_the_first_token_made_over_loopback_turns_authentication_on(client):
    assert client.get("/api/v1/jobs").status_code == 200  # open: no token exists
    made = client.post("/api/v1/tokens", json={"name": "first", "scope": "admin"})
    assert made.status_code == 201
    assert client.get("/api/v1/jobs").status_code == 401
    assert client.get("/api/v1/jobs", headers=bearer(made.json()["secret"])).status_code == 200


def test_token_input_is_bounded(secured, tokens):
    admin = bearer(tokens["admin"])
    cases = [
        ({"name": "", "scope": "read"}, "name"),
        ({"name": "x" * 129, "scope": "read"}, "name"),
        ({"name": "x", "scope": "root"}, "scope"),
        ({"name": "x", "scope": "read", "namespaces": []}, "namespaces"),
        ({"name": "a\u0000b", "scope": "read"}, "name"),
    ]
    for body, field in cases:
        answer = secured.post("/api/v1/tokens", json=body, headers=admin)
        assert answer.status_code == 422, body
        assert field in answer.json()["error"]["field"]


def test_retention_deletes_old_samples_of_summarized_jobs_only(client, session, settings):
    now = utcnow()
    old, recent = now - timedelta(days=40), now - timedelta(days=2)
    for uid, summarized in (("done", True), ("open", False)):
        job = make_job(session, uid, start=old - timedelta(hours=1), hours=None, status="running")
        if summarized:
            job.summarized_at = now
        node = f"{uid}-worker-0"
        add_node(session, job, node, "worker", created_at=old, cpu=2, memory_mib=1024)
        points = [{"ts": ts, "cpu": 1.0, "memory_mib": 100.0} for ts in (old, recent)]
        add_points(session, job, node, "worker", points)
    session.commit()

    refused = client.post("/api/v1/retention", json={})
    assert refused.status_code == 422 and refused.json()["error"]["field"] == "older_than_days"
    # Without a body, as without the field: BRAIN_RETENTION_DAYS, unset here.
    assert client.post("/api/v1/retention").json() == refused.json()
    # 50 days keeps both the 40-day-old and the 2-day-old samples.
    kept = client.post("/api/v1/retention", json={"older_than_days": 50})
    assert kept.json() == {"older_than_days": 50, "deleted_samples": 0}
    with TestClient(create_app(settings.model_copy(update={"retention_days": 30}))) as configured:
        answer = configured.post("/api/v1/retention")
    assert answer.status_code == 200
    # Only the 40-day-old sample of the summarized job goes: 4 samples, 1 deleted.
    assert answer.json() == {"older_than_days": 30, "deleted_samples": 1}
    left = session.scalar(select(func.count()).select_from(NodeSampleRow))
    assert left == 3
