"""Without related history the create plan is the job's own request held to its limits,
over gRPC as over REST: the master is told the plan Brain stored."""

from __future__ import annotations

import grpc
from dlrover.proto import brain_pb2_grpc

from tests.builders.dlrover import JOB_UID, MIB, job_body, optimize

# 2 PS of 6 cores and 45 GiB, 3 workers of 4 cores, under a 20-core limit: 24 cores as
# asked, so the guard gives up one worker (2 x 6 + 2 x 4 = 20).
ROLES = {
    "ps": {"count": 2, "cpu": 6, "memory_mib": 46080},
    "worker": {"count": 3, "cpu": 4, "memory_mib": 8192},
}
BODY = job_body(roles=ROLES, limits={"cpu": 20})


def test_grpc_and_rest_give_the_same_create_plan_and_the_master_is_told_it(brain):
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=BODY).status_code == 201
    assert brain.rest.put("/api/v1/jobs/rest-twin", json=BODY).status_code == 201
    with grpc.insecure_channel(brain.addr) as channel:
        answer = optimize(brain_pb2_grpc.BrainStub(channel), "job_stage_create")
    groups = answer.job_optimize_plans[0].resource.task_group_resources
    told = {r: (g.count, g.resource.cpu, g.resource.memory // MIB) for r, g in groups.items()}
    # the job's request, not startup's defaults (1 PS x 8 cores x 8192 MiB, 8-core workers)
    assert told == {"ps": (2, 6, 46080), "worker": (2, 4, 8192)}
    [stored] = brain.rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()
    assert stored["status_message"] is None
    sizes = {r: (s["count"], s["cpu"], s["memory_mib"]) for r, s in stored["roles"].items()}
    assert sizes == {"ps": (2, 6, 46080), "worker": (2, 4, 8192)}
    rest = brain.rest.post("/api/v1/jobs/rest-twin/optimize", json={"stage": "create"}).json()
    assert rest["roles"] == stored["roles"]
    assert "the job's own request" in rest["reasons"][0]["message"]
