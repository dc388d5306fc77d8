"""Every endpoint and every optimizer stage, driven by two namespaces: team A's token
touches nothing of team B's, and reads neither B's uids nor B's numbers anywhere.

B's runs use 54,321 MiB (a number that appears nowhere of A's); A's use 11,111. After
A's sweep over every operation of the API (with B's uid, plan id, node, user and group
where a path takes one, and with its own), B's data reads exactly as before.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

from api.app import create_app
from brain.config import Settings
from brain.domain import utcnow
from tests.builders import job_body, node_point
from tests.builders.tenancy import A, B, finished_run

B_MIB, A_MIB = 54_321, 11_111
# B's number as a JSON number of its own (not digits inside another number's decimals).
B_NUMBER = re.compile(rf"(?<![\d.]){B_MIB}(\.0+)?(?![\d.])")
REGISTER = ("PUT", "/api/v1/jobs/{uid}")
DELETE = ("DELETE", "/api/v1/jobs/{uid}")
# Registering B's uid registers A's own job of that uid (uids are per namespace): last,
# so that every other operation on B's uid finds no job of A's.
OPERATIONS = sorted(
    (
        (method.upper(), path)
        for path, methods in create_app(Settings()).openapi()["paths"].items()
        for method in methods
    ),
    key=lambda operation: operation == REGISTER,
)


def _live_job(client, headers, team: str, uid: str, memory_mib: float) -> dict:
    """A running job with samples, speed, an OOM and a plan of every stage."""
    start = (utcnow() - timedelta(hours=2)).replace(microsecond=0)
    body = job_body(
        name="ctr",
        user="bob",
        dataset="clicks",
        namespace=team,
        status="running",
        started_at=start.isoformat(),
        roles={
            "ps": {"count": 1, "cpu": 4, "memory_mib": 8192},
            "worker": {"count": 2, "cpu": 4, "memory_mib": 90_000},
        },
    )
    assert client.put(f"/api/v1/jobs/{uid}", json=body, headers=headers).status_code == 201
    node = f"{uid}-edljob-worker-0"
    ts = [(start + timedelta(minutes=m)).isoformat() for m in range(0, 61, 15)]
    batch = {
        "nodes": [node_point(node, t, 3.0, memory_mib) for t in ts],
        "speed": [
            {"ts": t, "global_step": 100 * i, "steps_per_sec": 10.0, "workers": 2}
            for i, t in enumerate(ts)
        ],
    }
    assert (
        client.post(f"/api/v1/jobs/{uid}/samples", json=batch, headers=headers).status_code == 200
    )
    oom = [{"ts": ts[-1], "kind": "oom", "node": node}]
    assert client.post(f"/api/v1/jobs/{uid}/events", json=oom, headers=headers).status_code == 200
    plans = {}
    for stage, extra in (
        ("create", {}),
        ("estimate", {}),
        ("running", {}),
        ("oom", {"node": node}),
    ):
        answer = client.post(
            f"/api/v1/jobs/{uid}/optimize", json={"stage": stage, **extra}, headers=headers
        )
        assert answer.status_code == 200, (stage, answer.text)
        plans[stage] = answer.json()
    return {"uid": uid, "node": node, "plan_id": plans["create"]["id"], "plans": plans}


def _snapshot(client, headers, uid: str) -> dict:
    paths = [
        f"/api/v1/jobs/{uid}",
        f"/api/v1/jobs/{uid}/samples",
        f"/api/v1/jobs/{uid}/nodes",
        f"/api/v1/jobs/{uid}/events",
        f"/api/v1/jobs/{uid}/plans",
        f"/api/v1/portraits/jobs/{uid}",
        f"/api/v1/portraits/jobs/{uid}/nodes",
        "/api/v1/jobs?limit=100",
        f"/api/v1/priorities?namespace={B}",
        f"/api/v1/portraits/users/bob?namespace={B}&days=30",
    ]
    answers = {path: client.get(path, headers=headers).json() for path in paths}
    for answer in answers.values():
        if isinstance(answer, dict):
            answer.pop("since", None)  # the window's start moves with the clock
            # a running job's portrait is computed at each read
            answer.get("summary", {}).pop("computed_at", None)
    return answers


def _path(template: str, values: dict) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", str(value))
    return template


def _body(method: str, path: str, values: dict) -> dict | list | None:
    bodies = {
        ("PUT", "/api/v1/jobs/{uid}"): job_body(namespace=A, user="bob", dataset="clicks"),
        ("PATCH", "/api/v1/jobs/{uid}"): {"status": "failed", "exit_reason": "by team A"},
        ("POST", "/api/v1/jobs/{uid}/samples"): {
            "nodes": [node_point(values["node"], utcnow().isoformat(), 0.1, 1)]
        },
        ("PUT", "/api/v1/jobs/{uid}/nodes/{name}"): {"role": "worker", "cpu": 1, "memory_mib": 1},
        ("POST", "/api/v1/jobs/{uid}/events"): [
            {"ts": utcnow().isoformat(), "kind": "oom", "node": values["node"]}
        ],
        ("POST", "/api/v1/jobs/{uid}/optimize"): {"stage": "create"},
        ("POST", "/api/v1/jobs/{uid}/plans/{plan_id}/status"): {"status": "rejected"},
        ("POST", "/api/v1/cluster/state"): {"source": "team-a", "nodes": 1, "free_cpu": 0},
        ("POST", "/api/v1/tokens"): {"name": "a-made", "scope": "admin"},
        ("POST", "/api/v1/retention"): {"older_than_days": 1},
    }
    return bodies.get((method, path))


def test_team_a_reads_nothing_of_team_b_and_changes_nothing_of_it(teams):  # noqa: F811
    client, tokens = teams
    admin = tokens["admin"]
    state = {"source": "volcano", "nodes": 10, "free_cpu": 1, "pending_cpu": 100}
    state["ts"] = (utcnow() - timedelta(seconds=30)).isoformat()
    assert client.post("/api/v1/cluster/state", json=state, headers=admin).status_code == 200
    for i in range(3):
        finished_run(client, tokens[B], f"b-run-{i}", B, cpu=3, memory_mib=B_MIB, days_ago=2 + i)
        finished_run(client, tokens[A], f"a-run-{i}", A, cpu=3, memory_mib=A_MIB, days_ago=2 + i)
    b = _live_job(client, tokens[B], B, "b-live", B_MIB)
    a = _live_job(client, tokens[A], A, "a-live", A_MIB)
    before = _snapshot(client, tokens[B], "b-live")
    b_texts = ("b-run-", "b-live")

    # Every optimizer stage of A's job learned from A's runs only.
    for stage, plan in a["plans"].items():
        text = json.dumps(plan)
        assert not any(t in text for t in b_texts), (stage, text[:500])
        assert not B_NUMBER.search(text), (stage, text[:500])

    answers = []
    for method, template in OPERATIONS:
        for target in (b, a):
            if (method, template) == DELETE and target is a:
                # A deleting its own job would leave nothing for the checks after the
                # sweep (tests/api/test_job_delete.py covers it); B's job is what matters.
                continue
            values = {
                "uid": target["uid"],
                "plan_id": target["plan_id"],
                "name": target["node"] if "nodes" in template else "team-b",
                "node": target["node"],
                "user": "bob",
                "group": "bob/ctr",
            }
            path = _path(template, values)
            body = _body(method, template, values)
            params = {"wait": 0} if template.endswith("/latest") else None
            answer = client.request(method, path, json=body, params=params, headers=tokens[A])
            # An answer may repeat what A sent (a 404 names the uid asked for): not a leak.
            echoed = answer.text.replace(target["uid"], "").replace(target["node"], "")
            answers.append((method, path, answer.status_code, echoed))
            assert answer.status_code < 500, (method, path, answer.text)
            if target is b and "{uid}" in template:
                # another namespace's job: as missing; a PUT registers A's own job
                expected = 201 if (method, template) == REGISTER else 404
                assert answer.status_code == expected, (method, path, answer.text)

    for method, path, status, text in answers:
        found = [text[max(text.find(t) - 80, 0) : text.find(t) + 40] for t in b_texts if t in text]
        assert not found, (method, path, status, found)
        assert not B_NUMBER.search(text), (method, path, status, text[:500])
    # Nothing of B's changed: job, samples, nodes, events, plans, portraits, priorities.
    assert _snapshot(client, tokens[B], "b-live") == before
