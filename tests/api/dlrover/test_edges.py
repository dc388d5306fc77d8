"""Input the master (or anything else) may send that Brain has no plan for, and a job
Brain knows nothing about: always a successful, empty or harmless answer, never a raise."""

from __future__ import annotations

import logging

import grpc
from dlrover.proto import brain_pb2, brain_pb2_grpc
from dlrover.python.common.constants import NodeType, OptimizeMode
from dlrover.python.common.node import NodeGroupResource, NodeResource
from dlrover.python.master.resource.job import JobResource, PSJobResourceOptimizer
from google.protobuf import empty_pb2

from brain.services import master_reports
from tests.builders.dlrover import JOB_UID, job_body, optimize, pod


def test_unknown_or_malformed_requests_get_an_empty_successful_answer(brain):
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        answers = {
            "unknown stage": optimize(stub, "job_stage_bogus"),
            "empty stage": optimize(stub, ""),
            "no job": optimize(stub, "job_stage_create", uid=None),
            "never-seen job": optimize(stub, "job_stage_ps_running", uid="no-such-job"),
            "bad pod name": optimize(stub, "job_stage_ps_initial", oom="not-a-dlrover-pod"),
            "oom in a stage without one": optimize(
                stub, "job_stage_worker_running", oom=pod("worker", 0)
            ),
        }
        for case, answer in answers.items():
            assert not answer.job_optimize_plans, case
            assert answer.response.reason, case
        assert "unknown stage 'job_stage_bogus'" in answers["unknown stage"].response.reason
        # Reports that cannot be read are dropped, and the call still succeeds.
        garbage = brain_pb2.JobMetrics(customized_data="{not json")
        garbage.job_meta.uuid = JOB_UID
        stub.persist_metrics(garbage)
        stub.persist_metrics(brain_pb2.JobMetrics(type="ParameterServerStrategy"))  # no uuid
    # Nothing was stored for them (no job was created, no plan made) ...
    assert [j["uid"] for j in brain.rest.get("/api/v1/jobs").json()["items"]] == [JOB_UID]
    assert brain.rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json() == []
    # ... and each call is counted by method and outcome.
    metrics = brain.rest.get("/metrics").text
    assert 'brain_grpc_requests_total{method="optimize",outcome="invalid"} 6.0' in metrics
    assert 'brain_grpc_requests_total{method="persist_metrics",outcome="invalid"} 2.0' in metrics


def test_create_for_a_job_brain_knows_nothing_about_keeps_the_users_request(brain, dlrover_context):
    # No registration, no history: Brain answers worker and PS groups of size 0, which the
    # master reads as "keep the ElasticJob's values", instead of no plan, which would
    # make it start 1-core / 8000 MiB workers in place of what the user asked for.
    dlrover_context.auto_ps_enabled = dlrover_context.auto_worker_enabled = True
    worker = NodeGroupResource(2, NodeResource(2, 4096))
    ps = NodeGroupResource(1, NodeResource(1, 2048))
    optimizer = PSJobResourceOptimizer(worker, ps, OptimizeMode.CLUSTER, "never-registered")
    job = JobResource()
    job.node_group_resources = {NodeType.WORKER: worker, NodeType.PS: ps}

    optimizer.init_job_resource(job)

    groups = brain.replies.optimize[0].job_optimize_plans[0].resource.task_group_resources
    assert {r: (g.count, g.resource.cpu, g.resource.memory) for r, g in groups.items()} == {
        "worker": (1, 0, 0),
        "ps": (1, 0, 0),
    }
    sizes = {
        role: (g.count, g.node_resource.cpu, g.node_resource.memory)
        for role, g in job.node_group_resources.items()
    }
    assert sizes == {NodeType.WORKER: (2, 2, 4096), NodeType.PS: (1, 1, 2048)}
    # The stored plan keeps the defaults the optimizers proposed, and says they were not sent.
    plan = brain.rest.get("/api/v1/jobs/never-registered/plans").json()[0]
    assert plan["stage"] == "create" and "DLRover was told" in plan["status_message"]


def test_an_internal_failure_is_an_empty_answer_not_an_error(brain, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(master_reports, "ensure_running_job", broken)
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        metrics = brain_pb2.JobMetrics(type="ParameterServerStrategy")
        metrics.job_meta.uuid = JOB_UID
        assert stub.persist_metrics(metrics) == empty_pb2.Empty()
        answer = optimize(stub, "job_stage_create")
    brain.settle()
    assert not answer.job_optimize_plans and not answer.response.success
    metrics_text = brain.rest.get("/metrics").text
    # The report was queued, then failed in the writer; optimize failed in its handler.
    assert "brain_grpc_report_write_errors_total 1.0" in metrics_text
    assert 'brain_grpc_requests_total{method="optimize",outcome="error"} 1.0' in metrics_text


def test_a_grpc_uid_longer_than_rest_takes_is_answered_without_a_traceback(brain, caplog):
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    request.jobs.add().uid = "u" * 10_000
    with caplog.at_level(logging.WARNING), grpc.insecure_channel(brain.addr) as channel:
        answer = brain_pb2_grpc.BrainStub(channel).optimize(request)
        metrics = brain_pb2_grpc.BrainStub(channel).get_job_metrics(
            brain_pb2.JobMetricsRequest(job_uuid="u" * 10_000)
        )
    assert not answer.response.success and "over 253 characters" in answer.response.reason
    assert not metrics.response.success
    # the adapter's and gRPC's own logs (gRPC logs what a servicer raises): other parts
    # of the app may log from threads of their own
    from_adapter = [r for r in caplog.records if r.name.startswith(("api.dlrover", "grpc"))]
    assert not [r for r in from_adapter if r.exc_info], "a traceback was logged"
    assert brain.rest.get("/api/v1/jobs").json()["items"] == []
