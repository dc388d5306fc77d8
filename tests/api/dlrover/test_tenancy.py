"""DLRover's ``job_stage_create`` over gRPC learns only from the job's own namespace, as
the REST create stage does: another namespace's runs under the same user and dataset
leave the answer unchanged."""

from __future__ import annotations

import grpc
from dlrover.proto import brain_pb2, brain_pb2_grpc

from tests.builders.tenancy import A, B, create_plan, finished_run


def _create_answer(stub, uid: str) -> dict[str, tuple[int, float, int]]:
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    request.jobs.add().uid = uid
    answer = stub.optimize(request)
    assert answer.response.success, answer.response.reason
    (plan,) = answer.job_optimize_plans
    return {
        role: (group.count, group.resource.cpu, group.resource.memory)
        for role, group in plan.resource.task_group_resources.items()
    }


def test_another_namespaces_runs_leave_the_grpc_create_answer_unchanged(brain):
    for i in range(3):
        finished_run(brain.rest, {}, f"b-run-{i}", B, cpu=12, memory_mib=50_000, days_ago=3 + i)
    create_plan(brain.rest, {}, "b-next", B)
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        before = _create_answer(stub, "b-next")
        for i in range(10):
            finished_run(brain.rest, {}, f"a-fake-{i}", A, cpu=0.1, memory_mib=100, days_ago=1)
        after = _create_answer(stub, "b-next")
    # B's worker, sized from B's 12 cores used: the same before and after A's runs.
    assert 12 <= before["worker"][1] < 16
    assert after == before
