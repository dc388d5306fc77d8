"""Every REST route that stores a name refuses one holding a control, format
(bidirectional override, zero-width) or line-separator character: a 422 naming the field,
and nothing stored. Samples pushed the fast way, node paths and a job's group, framework
and GPU type once let them through (``"w0\\n... FORGED LOG LINE"``, ``"\\u202eREKROW"``,
``PUT .../nodes/w0%0Aforged``)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from brain.cli import main
from brain.db.models import ApiToken, Base, JobRow
from tests.builders import job_body, node_point
from tests.builders.names import name_holding_refused, stored_names_refused

TS = "2026-03-01T00:00:00Z"


def _point(**override) -> dict:
    return node_point("j-edljob-worker-0", TS, 1, 1024) | override


def _samples(field: str) -> Callable:
    # Two points of the same node: the batch is one the fast way takes (no NUL, no
    # numeric time), so the name check there is what refuses it.
    def call(client, bad):
        point = _point(**{field: bad})
        batch = {"nodes": [point, point | {"ts": "2026-03-01T00:00:15Z"}]}
        return client.post("/api/v1/jobs/j/samples", json=batch)

    return call


def _job(field: str) -> Callable:
    return lambda client, bad: client.put("/api/v1/jobs/j2", json=job_body(**{field: bad}))


# (route, the field the 422 must name, the call with the bad name in it)
ROUTES = [
    ("PUT /jobs/{uid}", "uid", lambda c, bad: c.put(f"/api/v1/jobs/{quote(bad)}", json=job_body())),
    *[
        (f"PUT /jobs/j2 {field}", field, _job(field))
        for field in ("name", "user", "dataset", "group_key", "framework", "cluster", "gpu_type")
    ],
    (
        "PUT /nodes/{name}",
        "name",
        lambda c, bad: c.put(f"/api/v1/jobs/j/nodes/{quote(bad)}", json={"role": "worker"}),
    ),
    (
        "PUT /nodes/n0 role",
        "role",
        lambda c, bad: c.put("/api/v1/jobs/j/nodes/n0", json={"role": bad}),
    ),
    (
        "PUT /nodes/n0 status",
        "status",
        lambda c, bad: c.put("/api/v1/jobs/j/nodes/n0", json={"role": "worker", "status": bad}),
    ),
    ("POST /samples name", "nodes.0.name", _samples("name")),
    ("POST /samples role", "nodes.0.role", _samples("role")),
    (
        "POST /events node",
        "0.node",
        lambda c, bad: c.post(
            "/api/v1/jobs/j/events", json=[{"ts": TS, "kind": "oom", "node": bad}]
        ),
    ),
    (
        "POST /optimize node",
        "node",
        lambda c, bad: c.post("/api/v1/jobs/j/optimize", json={"stage": "oom", "node": bad}),
    ),
    (
        "POST /tokens name",
        "name",
        lambda c, bad: c.post("/api/v1/tokens", json={"name": bad, "scope": "read"}),
    ),
    (
        "POST /tokens namespaces",
        "namespaces.0",
        lambda c, bad: c.post(
            "/api/v1/tokens", json={"name": "t", "scope": "read", "namespaces": [bad]}
        ),
    ),
]


def _row_counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            table.name: conn.scalar(select(func.count()).select_from(table))
            for table in Base.metadata.sorted_tables
        }


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), bad=name_holding_refused())
def test_every_route_refuses_a_name_holding_a_refused_character_and_stores_nothing(
    client, db, route, bad
):
    if client.get("/api/v1/jobs/j").status_code == 404:  # the first example
        assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    before = _row_counts(db)
    job_before = client.get("/api/v1/jobs/j").json()
    _name, field, call = route
    answer = call(client, bad)
    assert answer.status_code == 422, (route[0], repr(bad), answer.text)
    error = answer.json()["error"]
    assert error["field"] == field
    assert error["message"].startswith(f"{field}: holds U+")
    assert _row_counts(db) == before
    assert client.get("/api/v1/jobs/j").json() == job_before
    assert stored_names_refused(db) == []


def test_the_reported_names_are_refused_and_the_same_names_without_them_stored(client, db):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    forged = _point(name="w0\n2026-11-27 ERROR FORGED LOG LINE")
    reversed_role = _point(role="\u202eREKROW")
    for point in (forged, reversed_role):
        answer = client.post("/api/v1/jobs/j/samples", json={"nodes": [point]})
        assert answer.status_code == 422, answer.text
    path = client.put("/api/v1/jobs/j/nodes/w0%0Aforged", json={"role": "worker"})
    assert path.status_code == 422 and path.json()["error"]["field"] == "name"
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(JobRow)) == 1
    # What may be stored still is: any script, spaces, punctuation.
    fine = _point(name="wörker 0 (ワーカー)", role="wörker")
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": [fine]}).status_code == 200
    assert [n["name"] for n in client.get("/api/v1/jobs/j/nodes").json()] == ["wörker 0 (ワーカー)"]
    assert stored_names_refused(db) == []


def test_brain_token_create_refuses_such_a_name_as_the_api_does(pg_url, db, monkeypatch, capsys):
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)
    for args in (
        ["--name", "ci\n2026-11-27 ERROR FORGED"],
        ["--name", "ci", "--namespace", "ml\u202e"],
    ):
        assert main(["token", "create", "--scope", "read", *args]) == 1
        assert "holds U+" in capsys.readouterr().err
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(ApiToken)) == 0
