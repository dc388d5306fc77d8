"""Input is taken as sent or refused: no number from a boolean or a string, no time from
a bare number, no path whose bytes are not UTF-8, no control or bidirectional characters
in names, Kubernetes names where they become Kubernetes objects, no token that is expired
when made, every status in the OpenAPI, and the gRPC uid bounded as the REST path is."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from api.state import server_state
from brain.db.engine import make_session_factory
from brain.db.models import ApiToken, JobRow
from brain.domain import utcnow
from brain.errors import InvalidInput
from brain.services.tokens import TokenScope, TokenVerifier, create_token, revoke_token
from tests.builders import job_body, node_point


def _jobs(client) -> int:
    with server_state(client.app).session_factory() as session:
        return session.scalar(select(func.count()).select_from(JobRow))


def _field(response) -> str:
    assert response.status_code == 422, response.text
    return response.json()["error"]["field"]


@pytest.mark.parametrize("cpu", [True, "5", "5.0"])
def test_a_boolean_or_a_string_is_not_a_number(client, cpu):
    roles = {"worker": {"count": 1, "cpu": cpu, "memory_mib": 1024}}
    assert _field(client.put("/api/v1/jobs/j", json=job_body(roles=roles))) == "roles.worker.cpu"
    count = {"worker": {"count": "2", "cpu": 1, "memory_mib": 1024}}
    assert _field(client.put("/api/v1/jobs/j", json=job_body(roles=count))) == "roles.worker.count"
    assert _jobs(client) == 0


def test_a_boolean_or_a_string_is_not_a_sample(client):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    ts = (utcnow() - timedelta(minutes=1)).isoformat()
    for bad in (True, "3"):
        point = node_point("j-edljob-worker-0", ts, 1, 100) | {"cpu": bad}
        response = client.post("/api/v1/jobs/j/samples", json={"nodes": [point]})
        assert _field(response) == "nodes.0.cpu"


@pytest.mark.parametrize("when", [1_700_000_000, 1_700_000_000_000, "1700000000", 1.7e9])
def test_a_bare_number_is_not_a_time(client, when):
    body = job_body(status="running", started_at=when)
    assert _field(client.put("/api/v1/jobs/j", json=body)) == "started_at"
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    point = node_point("j-edljob-worker-0", "2026-01-01T00:00:00Z", 1, 100) | {"ts": when}
    assert _field(client.post("/api/v1/jobs/j/samples", json={"nodes": [point]})) == "nodes.0.ts"
    answer = client.get("/api/v1/jobs/j/samples", params={"start": str(when)})
    assert _field(answer) == "start"


def test_a_path_that_is_not_utf8_is_refused_not_merged(client):
    # %ff and %fe would both decode to U+FFFD: two uids, one job
    for path in ("/api/v1/jobs/%ff", "/api/v1/jobs/%fe"):
        response = client.put(path, json=job_body())
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "bad_request"
    assert client.get("/api/v1/jobs/%ff/plans").status_code == 400
    assert _jobs(client) == 0
    # well-formed UTF-8 stays fine
    assert client.put("/api/v1/jobs/caf%C3%A9", json=job_body()).status_code == 201
    assert client.get("/api/v1/jobs/café").json()["uid"] == "café"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "train\nINFO forged log line"),
        ("name", "evil\u202etxt.exe"),
        ("user", "alice\r"),
        ("namespace", "Team_A"),
        ("namespace", "a" * 64),
        ("namespace", "-ml"),
    ],
)
def test_names_hold_no_control_or_bidi_characters_and_namespaces_are_kubernetes(
    client, field, value
):
    assert _field(client.put("/api/v1/jobs/j", json=job_body(**{field: value}))) == field
    assert _jobs(client) == 0


def test_a_scaleplan_is_not_rendered_for_a_name_kubernetes_refuses(client):
    assert client.put("/api/v1/jobs/j", json=job_body(name="CTR Train")).status_code == 201
    plan = client.post("/api/v1/jobs/j/optimize", json={"stage": "create"}).json()
    response = client.get(f"/api/v1/jobs/j/plans/{plan['id']}", params={"format": "k8s"})
    assert response.status_code == 409
    assert response.json()["error"]["field"] == "format"
    assert "'CTR Train'" in response.json()["error"]["message"]
    # the same plan as JSON is fine
    assert client.get(f"/api/v1/jobs/j/plans/{plan['id']}").status_code == 200


def test_json_nested_too_deep_is_a_documented_400(client):
    deep = "[" * 100_000 + "]" * 100_000
    response = client.put(
        "/api/v1/jobs/j", content=deep, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (400, 422)
    responses = client.get("/openapi.json").json()["paths"]["/api/v1/jobs/{uid}"]["put"]
    assert str(response.status_code) in responses["responses"]
    assert "400" in responses["responses"]


def test_a_token_expiring_in_the_past_is_refused(session, client):
    with pytest.raises(InvalidInput) as refused:
        create_token(session, "late", TokenScope.read, expires_at=utcnow() - timedelta(seconds=1))
    assert refused.value.field == "expires_at"
    past = (utcnow() - timedelta(days=1)).isoformat()
    body = {"name": "late", "scope": "read", "expires_at": past}
    response = client.post("/api/v1/tokens", json=body)
    assert _field(response) == "expires_at"
    assert session.scalar(select(func.count()).select_from(ApiToken)) == 0


def test_a_revoked_token_is_refused_by_every_process_at_its_next_check(db):
    factory = make_session_factory(db)
    with factory() as session:
        secret = create_token(session, "ci", TokenScope.write).secret
        session.commit()
    # two worker processes, each with its own cache of token checks (an hour here)
    workers = [TokenVerifier(factory, ttl_s=3600) for _ in range(2)]
    assert all(w.verify(secret) is not None for w in workers)
    with factory() as session:
        revoke_token(session, "ci")
        session.commit()
    # The token version in the database changed: neither answers from its cache.
    assert [w.verify(secret) for w in workers] == [None, None]
