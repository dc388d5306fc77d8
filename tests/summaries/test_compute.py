"""A small job's summary, worked out by hand (see builders.hand_job for the inputs)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from brain.db.models import JobSummaryRow, NodeSampleRow, NodeSummaryRow, RoleSummaryRow
from brain.domain import utcnow
from brain.summaries import summarize_job
from brain.summaries.hours import Hours
from brain.summaries.retention import delete_old_samples
from brain.summaries.series import USAGE_COLUMNS, unpack
from brain.summaries.store import summarize_jobs
from tests.builders import add_points, at, flat_job, hand_job, recent_hour

approx = pytest.approx


def _roles(session, job_id) -> dict[str, RoleSummaryRow]:
    rows = session.scalars(select(RoleSummaryRow).where(RoleSummaryRow.job_id == job_id))
    return {r.role: r for r in rows}


def _nodes(session, job_id) -> dict[str, NodeSummaryRow]:
    rows = session.scalars(select(NodeSummaryRow).where(NodeSummaryRow.job_id == job_id))
    return {n.name: n for n in rows}


def test_node_statistics_and_hours(session):
    job = hand_job(session)
    summarize_job(session, job)
    nodes = _nodes(session, job.id)

    w0 = nodes["worker-0"]
    # CPU 2, 4, 6, 8: mean 5; p50 between 4 and 6 = 5; p95 at rank 0.95*3 = 2.85: 6 + 0.85*2.
    assert (w0.cpu_mean_cores, w0.cpu_p50_cores, w0.cpu_p95_cores, w0.cpu_max_cores) == approx(
        (5, 5, 7.7, 8)
    )
    # GPU memory 1000..4000: p95 = 3000 + 0.85*1000.
    assert (w0.gpu_memory_p95_mib, w0.gpu_memory_max_mib, w0.gpu_memory_total_mib) == approx(
        (3850, 4000, 16000)
    )
    # Sampled and ran 10:00-11:00 = 1 h. Requested 8 cores x 1 h; used mean 5 x 1 h.
    assert (w0.run_seconds, w0.sampled_seconds) == (3600, 3600)
    assert (w0.requested_core_hours, w0.used_core_hours) == approx((8, 5))
    # 16384 MiB = 16 GiB x 1 h requested; 4096 MiB = 4 GiB x 1 h used.
    assert (w0.requested_gib_hours, w0.used_gib_hours) == approx((16, 4))
    # 1 GPU x 1 h requested; utilization 0.5 x 1 GPU x 1 h used.
    assert (w0.requested_gpu_hours, w0.used_gpu_hours) == approx((1, 0.5))
    assert (w0.oom_count, w0.failure_count) == (0, 1)

    w1 = nodes["worker-1"]
    # Registered and first sampled at 10:30: 0.5 h run and sampled.
    assert (w1.run_seconds, w1.sampled_seconds) == (1800, 1800)
    # 8 x 0.5 = 4 core-h requested; mean CPU (4+6)/2 = 5 x 0.5 = 2.5 used.
    assert (w1.requested_core_hours, w1.used_core_hours) == approx((4, 2.5))
    # GPU utilization 1.0 then 0.0: mean 0.5 x 1 GPU x 0.5 h.
    assert (w1.requested_gpu_hours, w1.used_gpu_hours) == approx((0.5, 0.25))
    assert w1.oom_count == 1

    ps = nodes["ps-0"]
    # CPU 1, 2, 3: p95 at rank 1.9: 2 + 0.9*1.
    assert (ps.cpu_mean_cores, ps.cpu_p50_cores, ps.cpu_p95_cores) == approx((2, 2, 2.9))
    # Memory 2048, 4096, 6144: mean 4096 MiB = 4 GiB x 1 h; request 8 GiB x 1 h.
    assert (ps.requested_gib_hours, ps.used_gib_hours) == approx((8, 4))
    assert ps.gpu_util_mean is None and ps.used_gpu_hours == 0


def test_role_statistics_pool_the_nodes_samples(session):
    job = hand_job(session)
    summarize_job(session, job)
    worker = _roles(session, job.id)["worker"]

    assert (worker.node_count, worker.samples) == (2, 6)
    # Pooled CPU 2, 4, 4, 6, 6, 8: mean 5; p50 at rank 2.5: 4 + 0.5*2 = 5;
    # p95 at rank 4.75: 6 + 0.75*2 = 7.5.
    assert (
        worker.cpu_mean_cores,
        worker.cpu_p50_cores,
        worker.cpu_p95_cores,
        worker.cpu_max_cores,
    ) == approx((5, 5, 7.5, 8))
    # GPU utilization 0.5 x4, 1.0, 0.0: mean 3/6 = 0.5.
    assert worker.gpu_util_mean == approx(0.5)
    # Sums of the two workers: 8+4, 5+2.5 core-h; 16+8, 4+4 GiB-h; 1+0.5, 0.5+0.25 GPU-h.
    hours = Hours.of(worker)
    assert (hours.requested_core_hours, hours.used_core_hours) == approx((12, 7.5))
    assert (hours.requested_gib_hours, hours.used_gib_hours) == approx((24, 8))
    assert (hours.requested_gpu_hours, hours.used_gpu_hours) == approx((1.5, 0.75))
    assert hours.waste("cpu") == approx(4.5)
    assert hours.efficiency("gpu") == approx(0.5)
    assert (worker.cpu_request_cores, worker.gpu_request) == (8, 1)
    assert (worker.oom_count, worker.failure_count) == (1, 1)


def test_job_totals_speed_and_plans(session):
    job = hand_job(session)
    summary = summarize_job(session, job)

    assert summary.final and summary.run_seconds == 3600
    assert (summary.node_count, summary.samples) == (3, 9)
    hours = Hours.of(summary)
    # ps + workers: 4+12 = 16 core-h requested, 2+7.5 = 9.5 used, 6.5 wasted.
    assert (hours.requested_core_hours, hours.used_core_hours) == approx((16, 9.5))
    assert hours.waste("cpu") == approx(6.5)
    # 8+24 = 32 GiB-h requested, 4+8 = 12 used, 20 wasted.
    assert hours.waste("memory") == approx(20)
    # Efficiency: CPU 9.5/16, memory 12/32, GPU 0.75/1.5; the score is their mean.
    assert hours.efficiency_score() == approx((9.5 / 16 + 12 / 32 + 0.5) / 3)
    assert (summary.oom_count, summary.failure_count) == (1, 1)
    # Speed 10, 10, 20, 20 steps/s with 1, 1, 2, 2 workers: 10 steps/s per worker.
    assert summary.speed_mean_steps_per_s == approx(15)
    assert summary.speed_per_worker_mean_steps_per_s == approx(10)
    # The plan applied at 10:30 splits the speed samples: 10 before, 20 after.
    [plan] = summary.plans
    assert plan["optimizers"] == ["worker_tuning"]
    assert (plan["speed_before_steps_per_s"], plan["speed_after_steps_per_s"]) == (10, 20)
    assert (plan["per_worker_before_steps_per_s"], plan["per_worker_after_steps_per_s"]) == (
        10,
        10,
    )
    assert job.summarized_at is not None


def test_resummarizing_replaces_the_rows(session):
    t0 = recent_hour()
    job = hand_job(session, t0=t0)
    summarize_job(session, job)
    session.commit()
    # A sample of worker-1 (10:45, 11 cores) that arrives after the first summary.
    add_points(session, job, "worker-1", "worker", [{"ts": at(t0, 45), "cpu": 11, "memory_mib": 0}])
    summarize_job(session, job)
    session.commit()

    assert session.scalar(select(func.count()).select_from(JobSummaryRow)) == 1
    assert session.scalar(select(func.count()).select_from(NodeSummaryRow)) == 3
    worker1 = _nodes(session, job.id)["worker-1"]
    # CPU 4, 11, 6: the new max, mean 7.
    assert (worker1.cpu_max_cores, worker1.cpu_mean_cores) == approx((11, 7))


def test_running_job_gets_a_snapshot_that_does_not_unlock_retention(session):
    start = recent_hour()
    job = flat_job(session, "run-1", start=start, cpu_request=4, cpu_used=1, status="running")
    summary = summarize_job(session, job)

    assert not summary.final
    assert job.summarized_at is None
    # Running: the end is the last sample, 1 h after the start.
    assert summary.ended_at == start + timedelta(hours=1)
    assert summary.requested_core_hours == approx(4)


def test_summary_survives_resummarizing_after_retention(session):
    job = hand_job(session)
    summarize_job(session, job)
    session.commit()
    delete_old_samples(session, older_than_days=1, now=utcnow() + timedelta(days=30))
    session.commit()
    assert session.scalar(select(func.count()).select_from(NodeSampleRow)) == 0

    summary = summarize_job(session, job)

    # Computed from 9 samples; none left: the stored numbers stay.
    assert summary.samples == 9
    assert summary.used_core_hours == approx(9.5)
    assert len(_nodes(session, job.id)) == 3


def test_stored_usage_series_is_in_bucket_order(session):
    """PostgreSQL hashes the buckets (no ORDER BY); the stored series must still run in
    bucket order with each bucket's own figures."""
    job = hand_job(session)
    summarize_job(session, job)
    worker = unpack(_roles(session, job.id)["worker"].usage_series, USAGE_COLUMNS)

    # 10:00-11:00 on 600 buckets of 6 s: samples at 0, 20, 30, 40 and 60 min fall in
    # buckets 0, 200, 300, 400 and 599 (the end belongs to the last bucket).
    assert worker["bucket"].tolist() == [0, 200, 300, 400, 599]
    assert worker["samples"].tolist() == [1, 1, 1, 1, 2]
    # worker-0 CPU 2, 4, -, 6, 8; worker-1 CPU 4 at 10:30 and 6 at 11:00.
    assert worker["cpu_mean_cores"].tolist() == [2, 4, 4, 6, 7]
    assert worker["cpu_max_cores"].tolist() == [2, 4, 4, 6, 8]
    assert worker["memory_mean_mib"].tolist() == [4096, 4096, 8192, 4096, 6144]
    assert worker["gpu_util_mean"].tolist() == [0.5, 0.5, 1.0, 0.5, 0.25]
    assert worker["gpu_memory_max_mib"].tolist() == [1000, 2000, 5000, 3000, 5000]


def test_a_batch_gives_each_job_the_summary_it_gets_alone(session):
    """A backfill summarizes jobs in batches: each job's grid, speed, plans and events
    must stay its own (the hand-worked figures of test_job_totals_speed_and_plans)."""
    job = hand_job(session)
    start = recent_hour() - timedelta(hours=4)
    short = flat_job(session, "short", start=start, cpu_request=4, cpu_used=1, hours=2)
    idle = flat_job(session, "idle", start=start, cpu_request=2, cpu_used=0.5, hours=3)

    summaries = summarize_jobs(session, [short, job, idle])

    assert [s.job_id for s in summaries] == [short.id, job.id, idle.id]
    hand = summaries[1]
    assert (hand.node_count, hand.samples, hand.oom_count, hand.failure_count) == (3, 9, 1, 1)
    assert Hours.of(hand).requested_core_hours == approx(16)
    assert hand.speed_mean_steps_per_s == approx(15)
    assert [(p["speed_before_steps_per_s"], p["speed_after_steps_per_s"]) for p in hand.plans] == [
        (10, 20)
    ]
    # 4 cores for 2 h, 1 used: 8 and 2 core-hours; 2 cores for 3 h, 0.5 used: 6 and 1.5.
    assert short.summarized_at is not None and idle.summarized_at is not None
    assert Hours.of(summaries[0]).requested_core_hours == approx(8)
    assert Hours.of(summaries[0]).used_core_hours == approx(2)
    assert Hours.of(summaries[2]).requested_core_hours == approx(6)
    assert Hours.of(summaries[2]).used_core_hours == approx(1.5)
    assert (summaries[0].oom_count, summaries[0].plans, summaries[2].plans) == (0, [], [])
    # Each job's series spans its own samples: the grids differ.
    assert summaries[0].series_bucket_seconds == approx(2 * 3600 / 600)
    assert summaries[2].series_bucket_seconds == approx(3 * 3600 / 600)
    for summary in summaries:
        roles = _roles(session, summary.job_id).values()
        counted = sum(unpack(r.usage_series, USAGE_COLUMNS)["samples"].sum() for r in roles)
        assert counted == summary.samples
