"""A short cluster reaches DLRover masters: their worker stages run the optimizers that
set the worker group, so the workers a job is walked into giving back are given back
there too, not only over REST. Numbers worked by hand in the comments."""

from __future__ import annotations

from datetime import timedelta

import grpc
from dlrover.proto import brain_pb2_grpc

from tests.builders import job_body, node_point, recent_hour
from tests.builders.dlrover import JOB_UID, optimize, pod

T0 = recent_hour()


def _ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def test_the_worker_stage_gives_workers_back_while_the_cluster_is_short(brain):
    # 6 workers of 4 cores, min_count 4 (2 elastic); 4 -> 6 workers took it from 100 to
    # 104 steps/s, so its last worker brings (104 - 100) / 2 / 104 = 1.9 %
    roles = {"worker": {"count": 6, "cpu": 4, "memory_mib": 4096, "min_count": 4}}
    body = job_body(roles=roles, status="running", strategy="allreduce", started_at=_ts(0))
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=body).status_code == 201
    nodes = [node_point(pod("worker", i), _ts(1800), 4, 2000) for i in range(6)]
    speeds = [(4, 100)] * 3 + [(6, 104)] * 3
    speed = [
        {"ts": _ts(1500 + 60 * k), "global_step": 1000 * k, "steps_per_sec": s, "workers": n}
        for k, (n, s) in enumerate(speeds)
    ]
    pushed = brain.rest.post(
        f"/api/v1/jobs/{JOB_UID}/samples", json={"nodes": nodes, "speed": speed}
    )
    assert pushed.status_code == 200
    # pending pods ask 20 cores and 10 are free: short by 10, so this job, the only
    # elastic one, gives back min(ceil(10 / 4), 2 elastic, max_return 2) = 2 workers
    state = {"source": "volcano", "ts": _ts(1790), "nodes": 10, "free_cpu": 10, "pending_cpu": 20}
    assert brain.rest.post("/api/v1/cluster/state", json=state).status_code == 200

    with grpc.insecure_channel(brain.addr) as channel:
        answer = optimize(brain_pb2_grpc.BrainStub(channel), "job_stage_worker_running")
    [plan] = answer.job_optimize_plans
    assert plan.resource.task_group_resources["worker"].count == 4
    stored = brain.rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()
    assert "cluster_shortage" in {r["optimizer"] for r in stored[0]["reasons"]}
