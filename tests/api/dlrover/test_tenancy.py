"""DLRover's ``job_stage_create`` over gRPC learns only from the job's own namespace, as
the REST create stage does: another namespace's runs under the same user and dataset
leave the answer unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from dlrover.proto import brain_pb2, brain_pb2_grpc
from dlrover.python.brain import client as brain_client
from dlrover.python.common.constants import ReporterType
from dlrover.python.master.stats.job_collector import JobMetricCollector

from tests.api.dlrover.conftest import Brain, serve_brain
from tests.builders import job_body
from tests.builders.tenancy import A, B, create_plan, finished_run, team_headers


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


def _optimize(stub, uid: str, stage: str = "job_stage_running", namespace: str = ""):
    request = brain_pb2.OptimizeRequest(type=stage)
    job = request.jobs.add()
    job.uid = uid
    job.namespace = namespace
    return stub.optimize(request)


def _exit_report(uid: str, *, scrambled_namespace: str) -> brain_pb2.JobMetrics:
    """A 0.6.1 master's exit report: its job_meta carries the namespace as "name"."""
    message = brain_pb2.JobMetrics(job_exit_reason="Completed")
    message.job_meta.uuid = uid
    message.job_meta.name = scrambled_namespace
    return message


def test_a_uid_in_two_namespaces_is_looked_up_by_the_namespace_the_master_names(brain):
    for team, user in ((A, "ann"), (B, "bea")):
        body = job_body(namespace=team, user=user, status="running")
        assert brain.rest.put("/api/v1/jobs/same-uid", json=body).status_code == 201
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        # optimize names no namespace: no job is guessed, and none is touched.
        answer = _optimize(stub, "same-uid")
        assert not answer.job_optimize_plans
        assert "team-a, team-b" in answer.response.reason
        for team in (A, B):
            plans = brain.rest.get("/api/v1/jobs/same-uid/plans", params={"namespace": team})
            assert plans.json() == []
        # Naming it, the master reaches that namespace's job only.
        named = _optimize(stub, "same-uid", namespace=B)
        assert named.response.success and named.response.reason.startswith("Brain plan")
        stub.persist_metrics(_exit_report("same-uid", scrambled_namespace=A))
        brain.settle()
    jobs = {
        team: brain.rest.get("/api/v1/jobs/same-uid", params={"namespace": team}).json()
        for team in (A, B)
    }
    assert (jobs[A]["status"], jobs[B]["status"]) == ("succeeded", "running")
    b_plans = brain.rest.get("/api/v1/jobs/same-uid/plans", params={"namespace": B}).json()
    a_plans = brain.rest.get("/api/v1/jobs/same-uid/plans", params={"namespace": A}).json()
    assert (len(a_plans), len(b_plans)) == (0, 1)


def test_a_job_first_reported_by_its_master_joins_the_namespace_the_master_names(brain):
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        stub.persist_metrics(_exit_report("k8s-uid", scrambled_namespace=A))
        brain.settle()
    job = brain.rest.get("/api/v1/jobs/k8s-uid").json()
    assert (job["namespace"], job["status"]) == (A, "succeeded")


@pytest.fixture
def teams_brain(settings, db, monkeypatch) -> Iterator[tuple[Brain, dict]]:
    """Brain with API tokens (team A and B limited to their namespace) and, as DLRover
    0.6.1 masters send no token, the gRPC port open (BRAIN_GRPC_AUTH=false)."""
    tokens = team_headers(db)
    open_grpc = settings.model_copy(update={"grpc_auth": False})
    for brain in serve_brain(open_grpc, monkeypatch):
        yield brain, tokens


def _master_of(uid: str, namespace: str) -> JobMetricCollector:
    """The master's own collector, built as DistributedJobMaster builds it: on the wire
    its reports carry the namespace (as ``job_meta.name``, 0.6.1's argument order)."""
    return JobMetricCollector(uid, namespace, "", "bea", reporter=ReporterType.DLROVER_BRAIN)


def _masters_create_plan(uid: str):
    """The create plan as the master's Brain client asks for it (uid only, no namespace)."""
    client = brain_client.GlobalBrainClient.BRAIN_CLIENT
    return client.get_optimization_plan(uid, "job_stage_create", "")


def test_a_uid_another_namespace_registers_never_denies_the_masters_job(teams_brain):
    brain, tokens = teams_brain
    rest = brain.rest
    body = job_body(namespace=B, user="bea", status="running")
    assert rest.put("/api/v1/jobs/b-live", json=body, headers=tokens[B]).status_code == 201
    master = _master_of("b-live", B)
    master.collect_job_type("ParameterServerStrategy")  # reaches B's job by its namespace
    brain.settle()
    # Team A registers the same uid in its own namespace.
    taken = job_body(namespace=A, user="mallory", status="running")
    assert rest.put("/api/v1/jobs/b-live", json=taken, headers=tokens[A]).status_code == 201

    answer = _masters_create_plan("b-live")
    assert answer.response.success, answer.response.reason
    assert answer.response.reason.startswith("Brain plan")
    master.collect_job_exit_reason("Completed")
    brain.settle()
    answer = brain_client.GlobalBrainClient.BRAIN_CLIENT.get_job_metrics("b-live")
    assert answer.response.success, answer.response.reason
    metrics = json.loads(answer.job_metrics)
    assert (metrics["job"]["namespace"], metrics["job"]["status"]) == (B, "succeeded")

    b_plans = rest.get("/api/v1/jobs/b-live/plans", headers=tokens[B]).json()
    assert [p["stage"] for p in b_plans] == ["create"]
    a_job = rest.get("/api/v1/jobs/b-live", headers=tokens[A]).json()
    assert (a_job["namespace"], a_job["status"]) == (A, "running")
    assert rest.get("/api/v1/jobs/b-live/plans", headers=tokens[A]).json() == []


def test_a_uid_planted_before_the_master_reports_gets_none_of_its_reports(teams_brain):
    """A registers B's uid before B's master ever reported: the master, naming team-b,
    creates B's own job; A's job learns nothing of B's run."""
    brain, tokens = teams_brain
    rest = brain.rest
    planted = job_body(namespace=A, user="mallory", status="running")
    assert rest.put("/api/v1/jobs/b-new", json=planted, headers=tokens[A]).status_code == 201
    master = _master_of("b-new", B)
    master.collect_job_type("ParameterServerStrategy")
    master.collect_training_hyper_params(epoch=3, batch_size=256)
    brain.settle()
    answer = _masters_create_plan("b-new")
    assert answer.response.success, answer.response.reason

    b_job = rest.get("/api/v1/jobs/b-new", headers=tokens[B]).json()
    assert (b_job["namespace"], b_job["user"]) == (B, "bea")
    assert [p["stage"] for p in rest.get("/api/v1/jobs/b-new/plans", headers=tokens[B]).json()] == [
        "create"
    ]
    a_job = rest.get("/api/v1/jobs/b-new", headers=tokens[A]).json()
    assert (a_job["user"], a_job["strategy"]) == ("mallory", planted["strategy"])
    assert rest.get("/api/v1/jobs/b-new/plans", headers=tokens[A]).json() == []
