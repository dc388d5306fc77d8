"""The master asks the estimate stage twice in a row (workers, then PS): one estimate
answers both while it is under ESTIMATE_REUSE_S old."""

from __future__ import annotations

from datetime import timedelta

import grpc
from dlrover.proto import brain_pb2_grpc

from api.dlrover import estimate_reuse
from brain.domain import utcnow
from tests.builders.dlrover import JOB_UID, job_body, optimize


def _plan_id(answer) -> int:
    assert answer.response.reason.startswith("Brain plan "), answer.response.reason
    return int(answer.response.reason.removeprefix("Brain plan "))


def test_the_ps_ask_reuses_a_recent_estimate_and_not_an_old_one(brain, monkeypatch):
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        workers = _plan_id(optimize(stub, "job_stage_worker_initial"))
        ps = _plan_id(optimize(stub, "job_stage_ps_initial"))
        assert ps == workers  # no second plan stored
        # 601 s later the estimate is too old: the PS ask gets a plan of its own.
        later = utcnow() + timedelta(seconds=estimate_reuse.ESTIMATE_REUSE_S + 1)
        monkeypatch.setattr(estimate_reuse, "utcnow", lambda: later)
        ps_later = _plan_id(optimize(stub, "job_stage_ps_initial"))
    assert ps_later > workers
    stages = [p["stage"] for p in brain.rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()]
    assert stages == ["estimate", "estimate"]
