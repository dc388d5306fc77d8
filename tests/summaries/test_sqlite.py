"""Summaries on the embedded SQLite default (pandas instead of SQL percentiles)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from brain.db.engine import make_engine, make_session_factory
from brain.db.models import NodeSummaryRow, RoleSummaryRow
from brain.portraits.jobs import job_portrait_of
from brain.summaries import summarize_job
from tests.builders import hand_job

approx = pytest.approx


def test_summarize_on_sqlite_matches_the_hand_numbers(sqlite_url):
    engine = make_engine(sqlite_url)
    try:
        with make_session_factory(engine)() as session:
            job = hand_job(session)
            summary = summarize_job(session, job)
            session.commit()

            # Same figures as test_compute on PostgreSQL.
            assert (summary.requested_core_hours, summary.used_core_hours) == approx((16, 9.5))
            assert (summary.requested_gib_hours, summary.used_gib_hours) == approx((32, 12))
            assert (summary.requested_gpu_hours, summary.used_gpu_hours) == approx((1.5, 0.75))
            worker = session.scalar(select(RoleSummaryRow).where(RoleSummaryRow.role == "worker"))
            assert (worker.cpu_p50_cores, worker.cpu_p95_cores) == approx((5, 7.5))
            w0 = session.scalar(select(NodeSummaryRow).where(NodeSummaryRow.name == "worker-0"))
            assert w0.cpu_p95_cores == approx(7.7)
            assert summary.speed_per_worker_mean_steps_per_s == approx(10)
            # Two chart buckets of 30 min: 10:00-10:30 holds worker CPU 2, 4; the rest 6, 8, 4, 6.
            series = job_portrait_of(session, job.uid, points=2).role_series["worker"]
            assert series["samples"].tolist() == [2, 4]
            assert series["cpu_mean_cores"].tolist() == approx([3, 6])
            assert series["cpu_max_cores"].tolist() == [4, 8]
            assert job.summarized_at is not None
    finally:
        engine.dispose()
