"""The gRPC intake holds names to the rule REST does (brain.names): a job uid, a user, a
namespace or an OOM-killed pod holding a control, format or line-separator character is
refused (an empty answer whose reason names it, or a report dropped as ``invalid``), and
no stored name ever holds one. The calls are made by DLRover 0.6.1's own BrainClient,
as its master makes them."""

from __future__ import annotations

from types import SimpleNamespace

import grpc
from dlrover.proto import brain_pb2, brain_pb2_grpc
from dlrover.python.brain.client import GlobalBrainClient, JobMeta
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from brain.db.models import JobRow
from tests.builders.dlrover import JOB_NAME, JOB_UID, job_body, pod
from tests.builders.names import name_holding_refused, stored_names_refused

OK_UID = "7a0e9d3c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"


def _master():
    return GlobalBrainClient.BRAIN_CLIENT


def _report_uid(brain, bad):
    _master().report_job_exit_reason(JobMeta(uuid=bad), "Completed")
    return None


def _report_user(brain, bad):
    _master().report_job_exit_reason(JobMeta(uuid=OK_UID, user=bad), "Completed")
    return None


def _optimize_uid(brain, bad):
    return _master().get_optimization_plan(bad, "job_stage_create", "brain")


def _optimize_namespace(brain, bad):
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    job = request.jobs.add()
    job.uid, job.namespace = JOB_UID, bad
    with grpc.insecure_channel(brain.addr) as channel:
        return brain_pb2_grpc.BrainStub(channel).optimize(request)


def _optimize_oom_pod(brain, bad):
    # A pod name that parses as DLRover's but for the refused character in its job part.
    killed = SimpleNamespace(name=pod("worker", 0, job=JOB_NAME + bad))
    return _master().get_oom_resource_plan([killed], JOB_UID, "job_stage_ps_initial", "brain")


CALLS = {
    "persist_metrics uuid": _report_uid,
    "persist_metrics user": _report_user,
    "optimize uid": _optimize_uid,
    "optimize namespace": _optimize_namespace,
    "optimize oom pod": _optimize_oom_pod,
}


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=st.sampled_from(sorted(CALLS)), bad=name_holding_refused())
def test_no_grpc_call_stores_a_name_holding_a_refused_character(brain, db, call, bad):
    if brain.rest.get(f"/api/v1/jobs/{JOB_UID}").status_code == 404:  # the first example
        assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    answer = CALLS[call](brain, bad)
    brain.settle()
    if answer is not None:  # optimize: an empty answer that says which field and why
        assert not answer.response.success and not answer.job_optimize_plans
        why = "is not a Kubernetes namespace" if call == "optimize namespace" else "holds U+"
        assert why in answer.response.reason, answer.response.reason
    assert stored_names_refused(db) == []
    with db.connect() as conn:
        jobs = dict(conn.execute(select(JobRow.uid, JobRow.user)).all())
    # The registered job, and the one whose master named a bad user: stored as "unknown".
    assert set(jobs) <= {JOB_UID, OK_UID}
    assert jobs.get(OK_UID, "unknown") == "unknown"


def test_the_refusals_are_counted_as_invalid_and_logged_without_the_name(brain, db, caplog):
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    _report_uid(brain, "w0\n2026-11-27 ERROR FORGED LOG LINE")
    answer = _optimize_uid(brain, "\u202eREKROW")
    brain.settle()
    assert answer.response.reason.startswith(
        "the job uid holds U+202E RIGHT-TO-LEFT OVERRIDE (format character) at position 0"
    )
    metrics = brain.rest.get("/metrics").text
    assert 'brain_grpc_requests_total{method="persist_metrics",outcome="invalid"} 1.0' in metrics
    assert 'brain_grpc_requests_total{method="optimize",outcome="invalid"} 1.0' in metrics
    assert "FORGED" not in caplog.text  # the refused uid is described, never written out
    with db.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(JobRow)) == 1
