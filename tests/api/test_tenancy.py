"""Two namespaces on one Brain: neither reads, infers nor moves the other's plans.

Team A and team B each hold a write token limited to their namespace. The attacks are
the ones a namespace-limited token could mount: register runs under the other team's
user and dataset (history poisoning), read the other's job uids from plan evidence, and
read the cluster's jobs through the cluster state.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.domain import utcnow
from tests.builders import job_body, node_point
from tests.builders.tenancy import A, B, create_plan, finished_run


def _cited_uids(plan: dict) -> set[str]:
    """Every job uid the plan's evidence names."""
    cited = set()
    for reason in plan["reasons"]:
        for key in ("related_jobs", "run_ids", "returned_before"):
            value = reason["evidence"].get(key)
            if isinstance(value, list):
                cited.update(v["uid"] if isinstance(v, dict) else v for v in value)
    return cited - {None}


def test_another_namespaces_runs_under_my_user_and_dataset_leave_my_create_plan_unchanged(teams):
    client, tokens = teams
    for i in range(3):
        finished_run(client, tokens[B], f"b-run-{i}", B, cpu=12, memory_mib=50_000, days_ago=3 + i)
    before = create_plan(client, tokens[B], "b-next", B)
    # B's runs size B's worker: from the 12 cores used, not the 16 asked.
    assert 12 <= before["roles"]["worker"]["cpu"] < 16
    assert _cited_uids(before) == {"b-run-0", "b-run-1", "b-run-2"}

    # A registers ten tiny succeeded runs under B's user and dataset, newer than B's.
    for i in range(10):
        finished_run(client, tokens[A], f"a-fake-{i}", A, cpu=0.1, memory_mib=100, days_ago=1)
    after = create_plan(client, tokens[B], "b-next", B)
    assert after["roles"] == before["roles"]
    assert _cited_uids(after) == {"b-run-0", "b-run-1", "b-run-2"}

    # And A's own create plan learns from A's runs only, naming none of B's.
    mine = create_plan(client, tokens[A], "a-next", A)
    assert _cited_uids(mine) <= {f"a-fake-{i}" for i in range(10)}
    # sized from A's 0.1-core runs: down from the 16 cores asked as far as one plan may
    # go (max_change_factor 8: 2 cores)
    assert mine["roles"]["worker"]["cpu"] == 16 / 8


def test_pooled_history_uses_other_namespaces_runs_without_naming_them(settings, teams):
    _, tokens = teams
    pooled = settings.model_copy(update={"history_across_namespaces": True})
    with TestClient(create_app(pooled)) as client:
        for i in range(3):
            finished_run(
                client, tokens[B], f"b-run-{i}", B, cpu=12, memory_mib=50_000, days_ago=3 + i
            )
        plan = create_plan(client, tokens["admin"], "a-next", A)
    # B's three runs sized it (12 cores used, not the 16 asked)...
    assert 12 <= plan["roles"]["worker"]["cpu"] < 16
    # ...but A's plan never names them.
    assert _cited_uids(plan) == set()
    related = [
        r["evidence"]["related_jobs"] for r in plan["reasons"] if "related_jobs" in r["evidence"]
    ]
    assert related == [[None, None, None]]


def test_a_restricted_caller_pools_only_the_namespaces_it_may_read(settings, teams):
    _, tokens = teams
    pooled = settings.model_copy(update={"history_across_namespaces": True})
    with TestClient(create_app(pooled)) as client:
        for i in range(3):
            finished_run(
                client, tokens[B], f"b-run-{i}", B, cpu=12, memory_mib=50_000, days_ago=3 + i
            )
        plan = create_plan(client, tokens[A], "a-next", A)
    # Token A may not read B's runs: no history, so the registered request stands.
    assert _cited_uids(plan) == set()
    assert all(r["evidence"].get("related_jobs") in (None, 0) for r in plan["reasons"]), plan[
        "reasons"
    ]


def test_a_restricted_token_reads_the_cluster_state_as_totals_only(teams):
    client, tokens = teams
    push = {"source": "volcano", "nodes": 40, "free_cpu": 12.5, "pending_cpu": 48}
    pushed = client.post("/api/v1/cluster/state", json=push, headers=tokens["admin"])
    assert pushed.status_code == 200
    finished_run(client, tokens[B], "b-run-0", B, cpu=12, memory_mib=50_000, days_ago=3)
    state = client.get("/api/v1/cluster/state", headers=tokens[A])
    assert state.status_code == 200
    assert "b-run-0" not in state.text
    assert set(state.json()) == {
        "source",
        "ts",
        "nodes",
        "free_cpu",
        "free_memory_mib",
        "free_gpu",
        "pending_pods",
        "pending_cpu",
        "pending_memory_mib",
        "pending_gpu",
        "queued_jobs",
    }


def _elastic_job(client, uid: str, namespace: str, workers: int, speeds, min_count: int) -> None:
    """A running allreduce job of 2-core workers whose speed samples end at T0 + 30 min."""
    t0 = (utcnow() - timedelta(days=1)).replace(microsecond=0)
    roles = {"worker": {"count": workers, "cpu": 2, "memory_mib": 4096, "min_count": min_count}}
    body = job_body(
        roles=roles,
        namespace=namespace,
        status="running",
        strategy="allreduce",
        started_at=t0.isoformat(),
    )
    assert client.put(f"/api/v1/jobs/{uid}", json=body).status_code == 201
    end = t0 + timedelta(minutes=30)
    nodes = [
        node_point(f"{uid}-edljob-worker-{i}", end.isoformat(), 2, 2000) for i in range(workers)
    ]
    speed = [
        {
            "ts": (end - timedelta(minutes=len(speeds) - 1 - k)).isoformat(),
            "global_step": 1000 * k,
            "steps_per_sec": sps,
            "workers": n,
        }
        for k, (n, sps) in enumerate(speeds)
    ]
    pushed = client.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": nodes, "speed": speed})
    assert pushed.status_code == 200, pushed.text
    # Pending pods ask 20 cores, 10 are free: short by 10 cores.
    state = {"source": "volcano", "ts": (end - timedelta(seconds=10)).isoformat(), "nodes": 10}
    state |= {"free_cpu": 10, "pending_cpu": 20}
    assert client.post("/api/v1/cluster/state", json=state).status_code == 200


def _shortage_reason(client, uid: str) -> dict:
    body = {"stage": "running", "optimizers": ["cluster_shortage"]}
    plan = client.post(f"/api/v1/jobs/{uid}/optimize", json=body)
    assert plan.status_code == 200, plan.text
    return next(r for r in plan.json()["reasons"] if r["optimizer"] == "cluster_shortage")


def _two_elastic_jobs(client) -> None:
    # a-lo (team A): 6 workers, one count seen: its last worker brings 1 / 6 = 16.7 %.
    _elastic_job(client, "a-lo", A, 6, [(6, 60)] * 3, min_count=2)
    # b-hi (team B): 4 workers: 1 / 4 = 25 %, so across namespaces a-lo would rank first.
    _elastic_job(client, "b-hi", B, 4, [(4, 40)] * 3, min_count=2)


def test_the_cluster_shortage_ranks_only_the_jobs_of_the_plans_namespace(client):
    _two_elastic_jobs(client)
    why = _shortage_reason(client, "b-hi")
    # Only b-hi is ranked: rank 1 of 1, ceil(10 / 2) = 5 wanted, 2 elastic: 4 -> 2.
    assert (why["evidence"]["rank"], why["evidence"]["elastic_jobs"]) == (1, 1)
    assert why["evidence"]["returned"] == 2
    assert why["evidence"]["returned_before"] == []
    assert "a-lo" not in str(why)


def test_a_pooled_cluster_shortage_does_not_name_the_other_namespaces_jobs(settings):
    pooled = settings.model_copy(update={"history_across_namespaces": True})
    with TestClient(create_app(pooled)) as client:
        _two_elastic_jobs(client)
        why = _shortage_reason(client, "b-hi")
    # a-lo ranks first and gives min(4 elastic, max_return 2, ceil(10 / 2) = 5) = 2
    # workers, 4 cores; 6 cores still short: b-hi gives ceil(6 / 2) = 3, at most 2.
    assert (why["evidence"]["rank"], why["evidence"]["elastic_jobs"]) == (2, 2)
    assert why["evidence"]["returned_before"] == [
        {"uid": None, "marginal_gain": pytest.approx(1 / 6), "gives": 2}
    ]
    assert "a-lo" not in str(why)
