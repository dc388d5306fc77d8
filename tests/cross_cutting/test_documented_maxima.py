"""Every documented maximum is served, on PostgreSQL and on SQLite: no 5xx, and what was
sent is stored exactly.

The maxima are those the docs and the OpenAPI state: ``BRAIN_MAX_BATCH_POINTS`` (10,000)
points per samples push, all of them new nodes; ``BRAIN_MAX_BODY_BYTES`` (16 MiB) per
body; names of 253 characters; 16 roles per job; 10,000 events per call, each on its own
node; 100,000 node points in one read; 100 namespaces of a token and 100 optimizers of
an optimize call; and every query parameter at its ``maximum``. A push of 10,000 new
nodes once took 90,000 bind parameters in one INSERT, over PostgreSQL's 65,535: a 503
however often it was retried.
"""

from __future__ import annotations

import json

import pytest

from api.app import create_app
from brain.bounds import MAX_ROLES
from brain.config import Settings
from brain.domain import K8S_NAME_MAX
from tests.builders import job_body

POINTS = Settings().max_batch_points  # 10,000
BODY_BYTES = Settings().max_body_bytes  # 16 MiB
EVENTS_PER_CALL = 10_000  # POST .../events, maxItems
TS = "2026-03-01T00:00:00Z"
# 16 roles of the longest label (64 characters), the first letter telling them apart.
ROLES = [chr(ord("a") + i) + "r" * 63 for i in range(MAX_ROLES)]


@pytest.fixture(params=["postgresql", "sqlite"])
def api(request):
    """A server on each database (authentication open on loopback: no token exists)."""
    return request.getfixturevalue("client" if request.param == "postgresql" else "sqlite_client")


def _node_name(i: int) -> str:
    return f"{i:05d}".ljust(K8S_NAME_MAX, "n")  # 253 characters, unique by its digits


def _cpu(i: int) -> float:
    return (i % 4096) / 4


def _new_nodes_batch() -> list[dict]:
    # Quarters of a core (at most 1023.75, within BRAIN_PLAUSIBLE_CPU) and halves of a
    # MiB: exact in binary, so they compare exactly.
    return [
        {
            "name": _node_name(i),
            "role": ROLES[i % MAX_ROLES],
            "index": i,
            "ts": TS,
            "cpu": _cpu(i),
            "memory_mib": i / 2,
        }
        for i in range(POINTS)
    ]


def _padded(body: dict, size: int) -> bytes:
    """``body`` as JSON, padded with trailing whitespace to exactly ``size`` bytes."""
    raw = json.dumps(body, separators=(",", ":")).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


def test_a_push_of_the_most_new_nodes_in_the_largest_body_is_stored_exactly(api):
    assert api.put("/api/v1/jobs/j", json=job_body(roles={})).status_code == 201
    body = _padded({"nodes": _new_nodes_batch()}, BODY_BYTES)
    assert len(body) == BODY_BYTES
    pushed = api.post(
        "/api/v1/jobs/j/samples", content=body, headers={"content-type": "application/json"}
    )
    assert pushed.status_code == 200, pushed.text[:500]
    assert pushed.json() == {"accepted": POINTS, "duplicates": 0}

    nodes = api.get("/api/v1/jobs/j/nodes").json()
    assert sorted((n["name"], n["role"], n["index"]) for n in nodes) == [
        (_node_name(i), ROLES[i % MAX_ROLES], i) for i in range(POINTS)
    ]
    series = api.get("/api/v1/jobs/j/samples", params={"limit": POINTS}).json()
    assert series["truncated"] is False
    assert len(series["nodes"]) == POINTS
    assert {p["name"]: (p["cpu"], p["memory_mib"]) for p in series["nodes"]} == {
        _node_name(i): (_cpu(i), i / 2) for i in range(POINTS)
    }
    # A retry of the whole push: every point a duplicate, no node added.
    again = api.post(
        "/api/v1/jobs/j/samples", content=body, headers={"content-type": "application/json"}
    )
    assert again.json() == {"accepted": 0, "duplicates": POINTS}
    assert len(api.get("/api/v1/jobs/j/nodes").json()) == POINTS


def test_the_most_speed_points_in_one_push_are_stored_exactly(api):
    assert api.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    speed = [
        {
            "ts": f"2026-03-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
            "global_step": i,
            "steps_per_sec": i / 8,
            "workers": i % 7,
        }
        for i in range(POINTS)
    ]
    pushed = api.post("/api/v1/jobs/j/samples", json={"speed": speed})
    assert pushed.status_code == 200, pushed.text[:500]
    assert pushed.json() == {"accepted": POINTS, "duplicates": 0}
    stored = api.get("/api/v1/jobs/j/samples", params={"limit": POINTS}).json()["speed"]
    assert [(p["global_step"], p["steps_per_sec"], p["workers"]) for p in stored] == [
        (i, i / 8, i % 7) for i in range(POINTS)
    ]


def test_the_most_events_in_one_call_each_on_its_own_node_are_stored_exactly(api):
    assert api.put("/api/v1/jobs/j", json=job_body(roles={})).status_code == 201
    nodes = _new_nodes_batch()[:EVENTS_PER_CALL]
    assert api.post("/api/v1/jobs/j/samples", json={"nodes": nodes}).status_code == 200
    events = [
        {"ts": TS, "kind": "oom", "node": node["name"], "detail": f"event {i}"}
        for i, node in enumerate(nodes)
    ]
    recorded = api.post("/api/v1/jobs/j/events", json=events)
    assert recorded.status_code == 200, recorded.text[:500]
    assert recorded.json() == {"accepted": EVENTS_PER_CALL, "duplicates": 0}
    listed = api.get("/api/v1/jobs/j/events", params={"limit": EVENTS_PER_CALL}).json()
    assert sorted((e["node"], e["detail"]) for e in listed) == sorted(
        (node["name"], f"event {i}") for i, node in enumerate(nodes)
    )


def _query_maxima(openapi: dict) -> list[tuple[str, str, dict]]:
    """(path, parameter, {parameter: its maximum}) for every GET query parameter with a
    ``maximum``, but the long-poll's ``wait`` (its maximum is a 60 s wait)."""
    found = []
    for path, methods in openapi["paths"].items():
        for parameter in methods.get("get", {}).get("parameters", []):
            if parameter["in"] != "query" or parameter["name"] == "wait":
                continue
            schema = parameter["schema"]
            options = [schema, *schema.get("anyOf", [])]
            maxima = [option["maximum"] for option in options if "maximum" in option]
            if maxima:
                found.append((path, parameter["name"], {parameter["name"]: maxima[0]}))
    return found


QUERY_MAXIMA = _query_maxima(create_app(Settings()).openapi())


def test_the_query_maxima_are_the_documented_ones():
    """The sweep below covers what the OpenAPI states (a guard against an empty sweep)."""
    stated = {(path, name) for path, name, _ in QUERY_MAXIMA}
    assert ("/api/v1/jobs", "limit") in stated
    assert ("/api/v1/jobs/{uid}/samples", "limit") in stated
    assert ("/api/v1/priorities", "offset") in stated
    assert len(stated) >= 20


def test_every_query_parameter_at_its_maximum_answers_without_a_server_error(api):
    assert api.put("/api/v1/jobs/j", json=job_body(roles={})).status_code == 201
    pushed = api.post("/api/v1/jobs/j/samples", json={"nodes": _new_nodes_batch()[:100]})
    assert pushed.status_code == 200
    answers = {}
    for path, _name, query in QUERY_MAXIMA:
        concrete = path.replace("{uid}", "j").replace("{user}", "alice")
        concrete = concrete.replace("{group}", "g").replace("{plan_id}", "1")
        answers[path, _name] = api.get(concrete, params=query).status_code
    assert not {where: status for where, status in answers.items() if status >= 500}


def test_the_most_node_points_one_read_returns_are_returned_exactly(api):
    """`GET .../samples?limit=100000`: ten pushes of the most points, 100 nodes at 1,000
    times each, read back in one answer."""
    limit = 100_000
    assert api.put("/api/v1/jobs/j", json=job_body(roles={})).status_code == 201
    for push in range(limit // POINTS):
        batch = [
            {
                "name": f"n{i % 100:03d}",
                "role": "worker",
                "index": i % 100,
                "ts": f"2026-03-01T{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z",
                "cpu": (t % 4096) / 4,
                "memory_mib": float(i % 100),
            }
            for i in range(POINTS)
            for t in [push * (POINTS // 100) + i // 100]
        ]
        pushed = api.post("/api/v1/jobs/j/samples", json={"nodes": batch})
        assert pushed.json() == {"accepted": POINTS, "duplicates": 0}, pushed.text[:300]
    series = api.get("/api/v1/jobs/j/samples", params={"limit": limit})
    assert series.status_code == 200
    points = series.json()["nodes"]
    assert series.json()["truncated"] is False and len(points) == limit
    # Time order, then node: point k is node k % 100 at second k // 100.
    assert [(p["name"], p["memory_mib"]) for p in points[:3]] == [
        ("n000", 0.0),
        ("n001", 1.0),
        ("n002", 2.0),
    ]
    assert sum(p["cpu"] for p in points) == sum(100 * (t % 4096) / 4 for t in range(1000))


def test_a_token_of_the_most_namespaces_and_an_optimize_of_the_most_optimizers(api):
    """`namespaces` (100) of `POST /api/v1/tokens` and `optimizers` (100) of
    `POST .../optimize`, each at its `maxItems`."""
    assert api.put("/api/v1/jobs/j", json=job_body(status="running")).status_code == 201
    running = [o["name"] for o in api.get("/api/v1/optimizers").json() if "running" in o["stages"]]
    optimizers = (running * 100)[:100]
    planned = api.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": optimizers}
    )
    assert planned.status_code in (200, 201), planned.text[:300]
    namespaces = [f"team-{i:03d}" for i in range(100)]
    made = api.post(
        "/api/v1/tokens", json={"name": "wide", "scope": "admin", "namespaces": namespaces}
    )
    assert made.status_code == 201, made.text[:300]
    assert made.json()["namespaces"] == namespaces
