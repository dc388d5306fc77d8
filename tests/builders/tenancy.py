"""Two teams on one Brain, each limited to its namespace (A and B), and the runs and
plans the tenancy tests make them record: ``team_headers`` for their tokens."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from brain.domain import utcnow
from tests.builders import bearer, job_body, record_run, token_secret

A, B = "team-a", "team-b"
# B's runs: a worker asks 16 cores / 65536 MiB and uses about 12 cores / 50,000 MiB.
B_WORKER = {"count": 2, "cpu": 16, "memory_mib": 65536}
B_PS = {"count": 1, "cpu": 4, "memory_mib": 8192}


def finished_run(client, headers, uid, namespace, *, cpu, memory_mib, days_ago, roles=None):
    """A succeeded run of user bob on dataset clicks: its worker-0 and ps-0 used ``cpu``
    cores and ``memory_mib`` MiB for an hour, sampled every 15 minutes."""
    body = job_body(
        name="ctr",
        user="bob",
        dataset="clicks",
        namespace=namespace,
        roles=roles or {"ps": B_PS, "worker": B_WORKER},
    )
    record_run(
        client,
        uid,
        body,
        {node: (cpu, memory_mib) for node in ("x-edljob-worker-0", "x-edljob-ps-0")},
        start=(utcnow() - timedelta(days=days_ago)).replace(microsecond=0),
        sample_minutes=range(0, 61, 15),
        finished_minutes=60,
        headers=headers,
    )


def create_plan(client, headers, uid, namespace) -> dict:
    """bob's ``ctr`` job on clicks registered in ``namespace`` and its create-stage plan."""
    body = job_body(
        name="ctr",
        user="bob",
        dataset="clicks",
        namespace=namespace,
        roles={"ps": B_PS, "worker": B_WORKER},
    )
    assert client.put(f"/api/v1/jobs/{uid}", json=body, headers=headers).status_code in (200, 201)
    optimize = {"stage": "create"}
    response = client.post(f"/api/v1/jobs/{uid}/optimize", json=optimize, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def team_headers(db: Engine) -> dict[str, dict[str, str]]:
    """Request headers for an admin token ("admin") and a write token per team (A, B)
    limited to its namespace."""
    headers = {}
    for name, namespaces in (("admin", None), (A, [A]), (B, [B])):
        scope = "admin" if namespaces is None else "write"
        headers[name] = bearer(token_secret(db, name, scope, namespaces))
    return headers
