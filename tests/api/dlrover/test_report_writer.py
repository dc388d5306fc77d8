"""The write-behind of persist_metrics: reports queued during a write are stored as one
batch, per job in one transaction, ending in the state storing them one by one gives."""

from __future__ import annotations

import json
import threading
import time

import grpc
from dlrover.proto import brain_pb2, brain_pb2_grpc
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.dlrover.writer import ReportWriter
from api.state import server_state
from brain.db.models import MasterReportRow
from tests.builders.dlrover import JOB_UID


def test_what_queues_during_a_write_is_written_as_one_batch():
    release, batches = threading.Event(), []

    def write_batch(items: list[int]) -> None:
        batches.append(items)
        assert release.wait(10)

    writer = ReportWriter(write_batch)
    writer.submit(1)
    assert _eventually(lambda: batches == [[1]])  # the writer holds 1
    for item in (2, 3, 4):  # queued while that write waits
        writer.submit(item)
    release.set()
    assert writer.wait_idle(10)
    writer.close()
    assert batches == [[1], [2, 3, 4]]


def test_a_full_queue_makes_the_caller_write():
    release, batches = threading.Event(), []

    def write_batch(items: list[int]) -> None:
        batches.append(items)
        if items == [1]:
            assert release.wait(10)

    writer = ReportWriter(write_batch, capacity=1)
    writer.submit(1)
    assert _eventually(lambda: batches == [[1]])  # the writer holds 1; the queue is empty
    writer.submit(2)  # queued
    writer.submit(3)  # the queue is full: written by this caller, at once
    assert batches == [[1], [3]]
    release.set()
    writer.close()
    assert batches == [[1], [3], [2]]


def test_queued_bytes_are_bounded_too():
    release, batches = threading.Event(), []

    def write_batch(items: list[int]) -> None:
        batches.append(items)
        if items == [1]:
            assert release.wait(10)

    # each item holds its value in bytes; at most 10 bytes wait in the queue
    writer = ReportWriter(write_batch, size=lambda item: item, max_bytes=10)
    writer.submit(1)
    assert _eventually(lambda: batches == [[1]])
    writer.submit(6)  # queued: 6 bytes wait (the held 1 still counts: 7)
    writer.submit(4)  # 7 + 4 = 11 > 10: written by this caller, at once
    assert batches == [[1], [4]]
    assert writer.queued_bytes() == 7
    release.set()
    assert writer.wait_idle(10)
    writer.close()
    assert batches == [[1], [4], [6]]
    assert writer.queued_bytes() == 0


def _eventually(check, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s  # bounded, and long enough for a loaded machine
    while not check():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.01)
    return True


def _custom(data: dict):
    message = brain_pb2.JobMetrics(customized_data=json.dumps(data))
    message.job_meta.uuid = JOB_UID
    return message


def test_a_burst_of_reports_is_stored_in_one_transaction_as_if_one_by_one(brain, db):
    store = server_state(brain.rest.app).grpc_server.servicer.reports.store
    release, calls = threading.Event(), []
    write_job = store.write_job

    def held_write_job(uid, reports):
        calls.append(len(reports))
        if len(calls) == 1:
            assert release.wait(10)
        write_job(uid, reports)

    store.write_job = held_write_job
    with grpc.insecure_channel(brain.addr) as channel:
        stub = brain_pb2_grpc.BrainStub(channel)
        stub.persist_metrics(_custom({"rdzv_round": 0}))
        assert _eventually(lambda: calls == [1])
        # While that write waits: cumulative custom data, changing, and two model reports.
        for data in ({"rdzv_round": 1}, {"init_training_time": 30}, {"rdzv_round": 2}):
            stub.persist_metrics(_custom(data))
        for ops in (10, 12):
            model = brain_pb2.JobMetrics()
            model.job_meta.uuid = JOB_UID
            model.model_feature.op_count = ops
            stub.persist_metrics(model)
        release.set()
        brain.settle()

    assert calls == [1, 5]  # the five queued reports: one write of the job
    with Session(db) as session:
        kept = {r.kind: r.body for r in session.scalars(select(MasterReportRow))}
    assert kept == {
        "customized_data": {"rdzv_round": 2, "init_training_time": 30},
        "model_feature": {"op_count": 12},
    }
