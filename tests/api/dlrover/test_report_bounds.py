"""What persist_metrics keeps is bounded, and one bad report costs only itself: the
dedupe remembers digests, a report or a cumulative customized_data over
BRAIN_GRPC_REPORT_MAX_BYTES is dropped, NaN and infinities are refused as REST refuses
them, and a report the store refuses leaves the job's other reports stored."""

from __future__ import annotations

import json

import grpc
import pytest
from dlrover.proto import brain_pb2, brain_pb2_grpc
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.state import server_state
from brain.db.models import MasterReportRow
from brain.services import master_reports
from tests.api.dlrover.conftest import serve_brain


def _report(stub, uid: str, **field) -> None:
    metrics = brain_pb2.JobMetrics(**field)
    metrics.job_meta.uuid = uid
    stub.persist_metrics(metrics)


def _kept(db) -> dict[tuple[str, str], dict]:
    with Session(db) as session:
        rows = session.scalars(select(MasterReportRow))
        return {(str(r.job_id), r.kind): r.body for r in rows}


@pytest.fixture
def small_brain(settings, monkeypatch):
    """Brain keeping reports of at most 2,048 bytes."""
    yield from serve_brain(settings.model_copy(update={"grpc_report_max_bytes": 2048}), monkeypatch)


def test_the_dedupe_remembers_digests_not_payloads(brain):
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        for i in range(5):
            _report(stub, "j", customized_data=json.dumps({f"k{i}": "x" * 10_000}))
    brain.settle()
    seen = list(server_state(brain.rest.app).grpc_server.servicer.reports.seen)
    assert len(seen) == 5
    # a SHA-256 digest (32 bytes) per report, not its 10,000-byte payload
    assert {len(key[2]) for key in seen} == {32}


def test_a_report_or_custom_data_over_the_bound_is_dropped(small_brain, db):
    brain = small_brain
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        # over 2,048 bytes as sent: dropped before it is parsed or queued
        _report(stub, "j", customized_data=json.dumps({"big": "x" * 3000}))
        # {"k1":"x..."} is 7 + 900 + 2 = 909 bytes; merged with k2: 1 + 2 x 907 + 2 = 1,817
        # bytes, kept; with k3 too: 1 + 3 x 907 + 2 + 1 = 2,724, over: k3 is refused.
        for key in ("k1", "k2", "k3"):
            _report(stub, "j", customized_data=json.dumps({key: "x" * 900}))
            brain.settle()
    (kept,) = _kept(db).values()
    assert sorted(kept) == ["k1", "k2"]
    assert len(json.dumps(kept, separators=(",", ":"))) == 1817
    metrics = brain.rest.get("/metrics").text
    assert 'brain_grpc_requests_total{method="persist_metrics",outcome="invalid"} 1.0' in metrics
    assert "brain_grpc_report_write_errors_total 1.0" in metrics


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_custom_data_with_a_non_finite_number_is_refused_and_costs_nothing_else(brain, bad):
    uids = [f"nan-{i}" for i in range(40)]
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        for uid in uids:
            _report(stub, uid, type="ParameterServerStrategy")
            _report(stub, uid, customized_data=f'{{"loss": {bad}}}')
            _report(stub, uid, job_exit_reason="Completed")
    brain.settle()
    jobs = {j["uid"]: j["status"] for j in brain.rest.get("/api/v1/jobs?limit=100").json()["items"]}
    # all 40 created and finished, none left running
    assert jobs == dict.fromkeys(uids, "succeeded")
    metrics = brain.rest.get("/metrics").text
    assert 'brain_grpc_requests_total{method="persist_metrics",outcome="invalid"} 40.0' in metrics


def test_a_report_the_store_refuses_leaves_the_jobs_other_reports_stored(brain, db, monkeypatch):
    real = master_reports.record_report

    def refuses_custom_data(session, job, kind, body, **options):
        if kind == "customized_data":
            raise ValueError("the database refused this value")
        return real(session, job, kind, body, **options)

    monkeypatch.setattr(master_reports, "record_report", refuses_custom_data)
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        _report(stub, "j", type="ParameterServerStrategy")
        _report(stub, "j", customized_data='{"step": 1}')
        _report(stub, "j", job_exit_reason="Completed")
    brain.settle()
    assert brain.rest.get("/api/v1/jobs/j").json()["status"] == "succeeded"
    assert [kind for _, kind in _kept(db)] == ["type"]
    assert "brain_grpc_report_write_errors_total 1.0" in brain.rest.get("/metrics").text
