"""What the master reports through persist_metrics (its own JobMetricCollector and
BrainReporter), and how Brain stores it."""

from __future__ import annotations

import json
import time

from dlrover.python.brain import client as brain_client
from dlrover.python.common.constants import ReporterType
from dlrover.python.master.stats.job_collector import JobMetricCollector
from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import JobSummaryRow, MasterReportRow
from tests.builders.dlrover import JOB_UID


def _collector() -> JobMetricCollector:
    # As DistributedJobMaster builds it: (uuid, namespace, cluster, user). 0.6.1 passes
    # them on positionally into JobMeta(uuid, name, namespace, cluster, user), so on the
    # wire the namespace arrives as the name and the user as the cluster.
    return JobMetricCollector(JOB_UID, "default", "", "carol", reporter=ReporterType.DLROVER_BRAIN)


def _wait_for_summary(engine, uid: str, timeout_s: float = 30) -> JobSummaryRow | None:
    # Bounded: the summary is written right after the answer, in the background, which a
    # loaded machine may run late.
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with Session(engine) as session:
            found = session.scalar(select(JobSummaryRow).where(JobSummaryRow.uid == uid))
            if found is not None:
                return found
        time.sleep(0.05)
    return None


def test_reports_are_stored_on_change_and_completed_finishes_the_job(brain, db):
    collector = _collector()
    collector.collect_job_type("ParameterServerStrategy")
    for _ in range(3):  # every worker registering its dataset sends the same values
        collector.collect_training_hyper_params(epoch=2, batch_size=512)
    collector.collect_custom_data({"rdzv_round": 1})
    collector.collect_custom_data()  # the rendezvous poll re-sends the same dict
    collector.collect_custom_data({"init_training_time": 31})
    brain.settle()

    job = brain.rest.get(f"/api/v1/jobs/{JOB_UID}").json()
    assert (job["name"], job["user"], job["strategy"], job["status"]) == (
        JOB_UID,
        "carol",
        "ps",
        "running",
    )
    with Session(db) as session:
        kept = {r.kind: r.body for r in session.scalars(select(MasterReportRow))}
    assert kept == {
        "type": {"type": "ParameterServerStrategy"},
        "training_hyper_params": {"batch_size": 512, "epoch": 2},
        "customized_data": {"rdzv_round": 1, "init_training_time": 31},
    }

    collector.collect_job_exit_reason("Completed")
    brain.settle()

    job = brain.rest.get(f"/api/v1/jobs/{JOB_UID}").json()
    assert (job["status"], job["exit_reason"]) == ("succeeded", None)
    assert job["finished_at"] is not None
    summary = _wait_for_summary(db, JOB_UID)
    assert summary is not None and summary.status == "succeeded"

    # get_job_metrics (the master never calls it) answers with the job and its reports.
    answer = brain_client.GlobalBrainClient.BRAIN_CLIENT.get_job_metrics(JOB_UID)
    assert answer.response.success
    body = json.loads(answer.job_metrics)
    assert body["job"]["uid"] == JOB_UID
    assert body["reports"]["customized_data"] == {"rdzv_round": 1, "init_training_time": 31}


def test_an_oom_exit_fails_the_job_with_a_job_level_oom_event(brain):
    collector = _collector()
    collector.collect_job_type("ParameterServerStrategy")
    collector.collect_job_exit_reason("PSOOM")
    brain.settle()
    job = brain.rest.get(f"/api/v1/jobs/{JOB_UID}").json()
    assert (job["status"], job["exit_reason"]) == ("failed", "PSOOM")
    events = brain.rest.get(f"/api/v1/jobs/{JOB_UID}/events", params={"kind": "oom"}).json()
    assert [(e["node"], e["detail"]) for e in events] == [(None, "PSOOM")]


def test_an_exit_reason_too_long_or_with_nul_is_kept_bounded(brain):
    collector = _collector()
    collector.collect_job_type("ParameterServerStrategy")
    collector.collect_job_exit_reason("Error\x00: " + "x" * 50_000)
    brain.settle()
    job = brain.rest.get(f"/api/v1/jobs/{JOB_UID}").json()
    # 4,000 characters: the reason's start, NUL dropped, marked as cut.
    assert job["status"] == "failed"
    assert len(job["exit_reason"]) == 4000
    assert job["exit_reason"].startswith("Error: xxx")
    assert job["exit_reason"].endswith("x [truncated by Brain]")


def test_a_uid_the_store_cannot_hold_is_ignored(brain, db):
    too_long = "u" * 254
    collector = JobMetricCollector(
        too_long, "default", "", "carol", reporter=ReporterType.DLROVER_BRAIN
    )
    collector.collect_job_type("ParameterServerStrategy")
    brain.settle()
    assert brain.rest.get(f"/api/v1/jobs/{'u' * 253}").status_code == 404
    with Session(db) as session:
        assert session.scalars(select(MasterReportRow)).all() == []
