"""OOM-killed workers and PS: the master's recovery asks Brain, which answers once per
event with oom_recovery's memory, and the master relaunches with it."""

from __future__ import annotations

import pytest
from dlrover.python.common.constants import JobOptStage, NodeType, OptimizeMode
from dlrover.python.common.node import Node, NodeGroupResource, NodeResource
from dlrover.python.master.resource.job import PSJobResourceOptimizer

from api.state import server_state
from brain.config import Settings
from tests.builders.dlrover import JOB_UID, MIB, job_body, pod


@pytest.fixture
def settings(pg_url, db) -> Settings:
    # x3 rather than the default x2, so Brain's answer differs from the master's own
    # doubling and the test sees which one the master applied.
    return Settings(database_url=pg_url, optimizer_settings={"oom_recovery": {"memory_factor": 3}})


def _optimizer(dlrover_context) -> PSJobResourceOptimizer:
    dlrover_context.auto_ps_enabled = dlrover_context.auto_worker_enabled = True
    # The ElasticJob: 3 workers and 2 PS of 2 cores / 4096 MiB each.
    worker = NodeGroupResource(3, NodeResource(2, 4096))
    ps = NodeGroupResource(2, NodeResource(2, 4096))
    return PSJobResourceOptimizer(worker, ps, OptimizeMode.CLUSTER, JOB_UID)


def _register(rest) -> None:
    roles = {
        "ps": {"count": 2, "cpu": 2, "memory_mib": 4096},
        "worker": {"count": 3, "cpu": 2, "memory_mib": 4096},
    }
    assert rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body(roles=roles)).status_code == 201


def _oom_plans(rest) -> list[dict]:
    return [p for p in rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json() if p["stage"] == "oom"]


def test_worker_oom_before_autoscaling_gets_brains_memory_once(brain, dlrover_context):
    _register(brain.rest)
    optimizer = _optimizer(dlrover_context)
    # Started, and the first auto-scaler plan not yet asked for.
    optimizer.set_job_stage(JobOptStage.WORKER_INITIAL)
    worker = Node(NodeType.WORKER, 1, NodeResource(2, 4096), name=pod("worker", 1))

    optimizer.adjust_oom_resource(worker)

    # Brain: 4096 x 3 = 12288 MiB. The master alone would double to 8192; it takes the
    # larger, within its +8192 MiB step: 4096 + 8192 = 12288.
    asked = brain.replies.requests[-1]
    assert asked.type == "job_stage_create"
    assert asked.jobs[0].state.pods[pod("worker", 1)].is_oom
    group = brain.replies.optimize[-1].job_optimize_plans[0].resource.task_group_resources
    assert set(group) == {"worker"}
    assert (group["worker"].count, group["worker"].resource.memory) == (3, 12288 * MIB)
    assert worker.config_resource.memory == 12288

    # The master asking again about the same pod gets the same plan, not a second step.
    again = Node(NodeType.WORKER, 1, NodeResource(2, 4096), name=pod("worker", 1))
    optimizer.adjust_oom_resource(again)
    assert again.config_resource.memory == 12288
    plans = _oom_plans(brain.rest)
    assert len(plans) == 1
    assert plans[0]["migrate"][0]["memory_mib"] == 12288.0
    events = brain.rest.get(f"/api/v1/jobs/{JOB_UID}/events", params={"kind": "oom"}).json()
    assert [e["node"] for e in events] == [pod("worker", 1)]


def test_workers_killed_together_get_one_fix_and_each_pod_its_memory(brain, dlrover_context):
    _register(brain.rest)
    # Brain knows the 3 workers (Prometheus saw them): a kill of one is fixed for all
    seen = [
        {
            "name": pod("worker", i),
            "role": "worker",
            "index": i,
            "ts": ts,
            "cpu": 1.5,
            "memory_mib": 4000.0,
        }
        for i in range(3)
        for ts in ("2026-03-01T00:00:00Z", "2026-03-01T00:01:00Z")
    ]
    pushed = brain.rest.post(f"/api/v1/jobs/{JOB_UID}/samples", json={"nodes": seen})
    assert pushed.status_code == 200, pushed.text
    optimizer = _optimizer(dlrover_context)
    optimizer.set_job_stage(JobOptStage.WORKER_INITIAL)
    first = Node(NodeType.WORKER, 1, NodeResource(2, 4096), name=pod("worker", 1))
    second = Node(NodeType.WORKER, 2, NodeResource(2, 4096), name=pod("worker", 2))

    optimizer.adjust_oom_resource(first)
    optimizer.adjust_oom_resource(second)

    # One fix for every worker (4096 x 3 = 12288 MiB); the second kill, which it covers,
    # gets no plan of its own, and its pod the fix's memory all the same.
    assert first.config_resource.memory == second.config_resource.memory == 12288
    groups = [a.job_optimize_plans[0].resource.task_group_resources for a in brain.replies.optimize]
    assert [g["worker"].resource.memory for g in groups[-2:]] == [12288 * MIB] * 2
    fix, covered = sorted(_oom_plans(brain.rest), key=lambda p: p["id"])
    assert fix["roles"]["worker"]["memory_mib"] == 12288.0 and fix["status"] == "proposed"
    assert covered["status"] == "no_change"
    assert covered["reasons"][0]["evidence"]["covered_by_plan"] == fix["id"]


def test_ps_oom_gets_brains_memory_for_that_pod(brain, dlrover_context):
    _register(brain.rest)
    optimizer = _optimizer(dlrover_context)
    optimizer.set_job_stage(JobOptStage.PS_RUNNING)
    ps = Node(NodeType.PS, 0, NodeResource(2, 4096), name=pod("ps", 0))

    optimizer.adjust_oom_resource(ps)

    asked = brain.replies.requests[-1]
    assert asked.type == "job_stage_ps_initial"
    assert list(asked.jobs[0].state.pods) == [pod("ps", 0)]
    resources = brain.replies.optimize[-1].job_optimize_plans[0].resource
    assert not resources.task_group_resources
    entry = resources.pod_resources[pod("ps", 0)]
    assert (entry.cpu, entry.memory) == (2, 12288 * MIB)
    # max(Brain 12288, 2 x 4096, the user's 4096) = 12288, a +8192 step.
    assert ps.config_resource.memory == 12288
    # The relaunched PS has a new name, so its own OOM is a new event with its own plan.
    relaunched = Node(NodeType.PS, 2, NodeResource(2, 12288), name=pod("ps", 2))
    optimizer.adjust_oom_resource(relaunched)
    events = brain.rest.get(f"/api/v1/jobs/{JOB_UID}/events", params={"kind": "oom"}).json()
    assert sorted(e["node"] for e in events) == [pod("ps", 0), pod("ps", 2)]
    assert len(_oom_plans(brain.rest)) == 2
    # Brain sizes a pod it never saw from the role's registered request (4096 -> 12288),
    # so here the master's own rule decides: 2 x 12288, at most +8192 -> 20480.
    assert relaunched.config_resource.memory == 20480


def test_an_oom_asked_about_after_the_finish_counts_in_the_summary(brain, dlrover_context):
    """The master's exit report came first (here: the job finished over REST and was
    summarized with no kill); its OOM recovery then asks about a worker killed before
    the end. The kill is recorded and the finished job summarized again after the answer."""
    _register(brain.rest)
    finish = {"status": "failed", "finished_at": "2026-03-01T01:00:00Z"}
    assert brain.rest.patch(f"/api/v1/jobs/{JOB_UID}", json=finish).status_code == 200
    portrait = f"/api/v1/portraits/jobs/{JOB_UID}"
    assert brain.rest.get(portrait).json()["summary"]["oom_count"] == 0
    optimizer = _optimizer(dlrover_context)
    optimizer.set_job_stage(JobOptStage.WORKER_INITIAL)

    optimizer.adjust_oom_resource(
        Node(NodeType.WORKER, 1, NodeResource(2, 4096), name=pod("worker", 1))
    )
    # Asked again about the same pod: the kill is counted once.
    optimizer.adjust_oom_resource(
        Node(NodeType.WORKER, 1, NodeResource(2, 4096), name=pod("worker", 1))
    )
    # The summaries run one at a time on the server's executor: this waits for them.
    server_state(brain.rest.app).grpc_server.summaries.submit(lambda: None).result(timeout=30)

    found = brain.rest.get(portrait).json()
    assert found["summary"]["oom_count"] == 1
    assert {r["role"]: r["oom_count"] for r in found["roles"]} == {"worker": 1}
    assert "OOM kills 1 ·" in brain.rest.get(f"/ui/jobs/{JOB_UID}").text
