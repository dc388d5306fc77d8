"""Compute a job's summary (job, role and node rows) from its raw samples and events.

Definitions (units are in the column names):

* A node's **run time** ``run_seconds`` is from its start to its end. Start: the earlier
  of its registration (``nodes.created_at``) and its first sample. End: its
  ``finished_at``, else the job's ``finished_at``, else its last sample (even when it
  was registered after that sample); never before its last sample. A node holds its
  request for its whole run time.
* A node's **sampled duration** ``sampled_seconds`` is last sample − first sample.
* **Requested** resource-hours = Σ over nodes of request × run time:
  core-hours with the CPU request (cores), GiB-hours with the memory request (MiB / 1024),
  GPU-hours with the GPU request (count).
* **Used** resource-hours = Σ over nodes of mean usage × sampled duration: core-hours
  with the mean CPU used, GiB-hours with the mean memory used, GPU-hours with the mean
  GPU utilization (0..1) × the node's GPU request. A node without samples uses nothing;
  one without GPU samples uses no GPU-hours.
* **Waste** = requested − used resource-hours (negative when usage exceeds the request,
  e.g. CPU bursting up to a higher limit); **efficiency** = used / requested.
* Usage statistics (mean, p50, p95, max) are over the node's samples; a role's pool the
  samples of all its nodes. p50 and p95 interpolate linearly between ordered samples.
* OOMs and failures count the job's ``oom`` and ``failed`` events; a role counts those
  of its nodes, the job also its job-level ones.
* The job's ``run_seconds`` is from ``started_at`` (else its first sample) to
  ``ended_at``: ``finished_at``, else its last sample.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from brain.db.engine import ReadSession
from brain.db.models import EventRow, JobRow, JobSummaryRow, NodeRow, NodeSummaryRow, RoleSummaryRow
from brain.domain import EventKind, JobStatus, as_utc, utcnow
from brain.summaries import series as series_
from brain.summaries.hours import Hours
from brain.summaries.speed import Speed, load_speeds, plan_effects, speed_stats
from brain.summaries.usage import JobUsage, Stat, Usage, job_usage

SECONDS_PER_HOUR = 3600.0
MIB_PER_GIB = 1024.0
COUNTED_EVENTS = {EventKind.oom.value: "oom_count", EventKind.failed.value: "failure_count"}


@dataclass(frozen=True)
class NodeSummary:
    """A node's summary: the values of its ``node_summaries`` row (``columns``, for the
    insert) and what its role's row is computed from. Not an ORM object: a backfill
    writes several per job, and building and flushing ORM objects would be most of its
    Python."""

    role: str
    cpu_request_cores: float
    memory_request_mib: float
    gpu_request: float
    samples: int
    hours: Hours
    columns: dict[str, Any]


@dataclass(frozen=True)
class SummaryRows:
    """A computed summary: rows not yet in any session (``store`` writes them)."""

    job: JobSummaryRow
    roles: list[RoleSummaryRow]
    node_values: list[NodeSummary]

    @property
    def nodes(self) -> list[NodeSummaryRow]:
        """The node rows as ORM objects, built when a reader asks (a portrait of a
        running job); storing them needs only ``node_values``."""
        return [NodeSummaryRow(**node.columns) for node in self.node_values]


def compute_summary(session: ReadSession, job: JobRow, now: datetime | None = None) -> SummaryRows:
    """The job's summary rows from its raw samples, events and plans (nothing is stored)."""
    return compute_summaries(session, [job], now)[0]


def compute_summaries(
    session: ReadSession, jobs: list[JobRow], now: datetime | None = None
) -> list[SummaryRows]:
    """``compute_summary`` of each job, with one statement per kind of input for all of
    them (a backfill pays a few round trips per batch, not a dozen per job)."""
    ids = [job.id for job in jobs]
    nodes: dict[int, list[NodeRow]] = {job_id: [] for job_id in ids}
    for node in session.scalars(
        select(NodeRow).where(NodeRow.job_id.in_(ids)).order_by(NodeRow.id)
    ):
        nodes[node.job_id].append(node)
    usage = job_usage(session, nodes)
    events = _event_counts(session, ids)
    speeds = load_speeds(session, ids)
    sample_times = {
        job_id: [t for u in usage[job_id].by_node.values() for t in (u.first_ts, u.last_ts)]
        + speeds[job_id].span()
        for job_id in ids
    }
    grids = {
        job_id: series_.Grid.spanning(min(times), max(times), series_.STORED_BUCKETS)
        for job_id, times in sample_times.items()
        if times
    }
    role_series = series_.usage_buckets(session, grids)
    plans = plan_effects(session, speeds)
    return [
        _summary_rows(
            job,
            nodes[job.id],
            usage[job.id],
            events.get(job.id, {}),
            speeds[job.id],
            sample_times[job.id],
            grids.get(job.id),
            role_series.get(job.id, {}),
            plans[job.id],
            now,
        )
        for job in jobs
    ]


def _summary_rows(
    job: JobRow,
    nodes: list[NodeRow],
    usage: JobUsage,
    events: dict[int | None, Counter],
    speed: Speed,
    sample_times: list[datetime],
    grid: series_.Grid | None,
    role_series: dict[str, series_.Columns],
    plans: list[dict[str, Any]],
    now: datetime | None,
) -> SummaryRows:
    node_rows = [_node_row(job, node, usage.by_node.get(node.id), events) for node in nodes]
    role_rows = []
    for role in sorted({n.role for n in nodes}):
        row = _role_row(
            job, role, [n for n in node_rows if n.role == role], usage.by_role.get(role)
        )
        if role in role_series:
            row.usage_series = series_.pack(role_series[role], series_.USAGE_COLUMNS)
        role_rows.append(row)

    job_level = events.get(None, Counter())
    totals = sum((Hours.of(r) for r in role_rows), Hours()) + Hours(
        oom_count=job_level["oom_count"], failure_count=job_level["failure_count"]
    )
    ended_at = _ended_at(job, sample_times)
    started_at = as_utc(job.started_at) if job.started_at else None
    run_from = started_at or (min(sample_times) if sample_times else ended_at)
    stats = speed_stats(speed)
    job_row = JobSummaryRow(
        job_id=job.id,
        final=JobStatus(job.status).finished,
        computed_at=now or utcnow(),
        started_at=started_at,
        ended_at=ended_at,
        run_seconds=max((ended_at - run_from).total_seconds(), 0.0),
        node_count=len(nodes),
        samples=sum(r.samples for r in node_rows),
        speed_mean_steps_per_s=stats.mean_steps_per_s,
        speed_per_worker_mean_steps_per_s=stats.per_worker_mean_steps_per_s,
        plans=plans,
        series_start=grid.start if grid else None,
        series_bucket_seconds=grid.bucket_seconds if grid else None,
        series_buckets=grid.buckets if grid else 0,
        speed_series=_speed_series(grid, speed),
        **totals.columns(),
    )
    copy_job_keys(job_row, job)
    return SummaryRows(job_row, role_rows, node_rows)


def _speed_series(grid: series_.Grid | None, speed: Speed) -> bytes | None:
    if grid is None or speed.empty:
        return None
    columns = series_.speed_buckets(speed.seconds, speed.steps_per_sec, speed.workers, grid)
    return series_.pack(columns, series_.SPEED_COLUMNS)


def copy_job_keys(row: JobSummaryRow, job: JobRow) -> None:
    """The job's identifying fields, kept on its summary for filtering without a join."""
    row.uid = job.uid
    row.name = job.name
    row.user = job.user
    row.dataset = job.dataset
    row.group_key = job.group_key
    row.gpu_type = job.gpu_type
    row.namespace = job.namespace
    row.status = job.status


def node_window(job: JobRow, node: NodeRow, usage: Usage | None) -> tuple[float, float]:
    """``(run_seconds, sampled_seconds)`` of a node, as defined in the module docstring."""
    start = as_utc(node.created_at)
    end_given = node.finished_at or job.finished_at
    if usage is None:
        end = as_utc(end_given) if end_given else start
        return max((end - start).total_seconds(), 0.0), 0.0
    start = min(start, usage.first_ts)
    # Without a given end the last sample is the end, even when the node was registered
    # later: a past run pushed today would otherwise hold its request until today.
    end = max(as_utc(end_given), usage.last_ts) if end_given else usage.last_ts
    return (end - start).total_seconds(), (usage.last_ts - usage.first_ts).total_seconds()


def node_hours(node: NodeRow, usage: Usage | None, run_s: float, sampled_s: float) -> Hours:
    requested = Hours(
        requested_core_hours=node.cpu * run_s / SECONDS_PER_HOUR,
        requested_gib_hours=node.memory_mib / MIB_PER_GIB * run_s / SECONDS_PER_HOUR,
        requested_gpu_hours=node.gpu * run_s / SECONDS_PER_HOUR,
    )
    if usage is None:
        return requested
    hours = sampled_s / SECONDS_PER_HOUR
    return requested + Hours(
        used_core_hours=(usage.cpu.mean or 0.0) * hours,
        used_gib_hours=(usage.memory_mib.mean or 0.0) / MIB_PER_GIB * hours,
        used_gpu_hours=(usage.gpu_util.mean or 0.0) * node.gpu * hours,
    )


def _node_row(
    job: JobRow, node: NodeRow, usage: Usage | None, events: dict[int | None, Counter]
) -> NodeSummary:
    run_s, sampled_s = node_window(job, node, usage)
    counts = events.get(node.id, Counter())
    hours = node_hours(node, usage, run_s, sampled_s) + Hours(
        oom_count=counts["oom_count"], failure_count=counts["failure_count"]
    )
    columns = {
        "job_id": job.id,
        "node_id": node.id,
        "name": node.name,
        "role": node.role,
        "cpu_request_cores": node.cpu,
        "memory_request_mib": node.memory_mib,
        "gpu_request": node.gpu,
        "first_sample_at": usage.first_ts if usage else None,
        "last_sample_at": usage.last_ts if usage else None,
        "run_seconds": run_s,
        "sampled_seconds": sampled_s,
        **usage_columns(usage),
        **hours.columns(),
    }
    return NodeSummary(
        role=node.role,
        cpu_request_cores=node.cpu,
        memory_request_mib=node.memory_mib,
        gpu_request=node.gpu,
        samples=usage.samples if usage else 0,
        hours=hours,
        columns=columns,
    )


def _role_row(
    job: JobRow, role: str, nodes: list[NodeSummary], usage: Usage | None
) -> RoleSummaryRow:
    count = len(nodes)
    return RoleSummaryRow(
        job_id=job.id,
        role=role,
        node_count=count,
        cpu_request_cores=sum(n.cpu_request_cores for n in nodes) / count,
        memory_request_mib=sum(n.memory_request_mib for n in nodes) / count,
        gpu_request=sum(n.gpu_request for n in nodes) / count,
        **usage_columns(usage),
        **sum((n.hours for n in nodes), Hours()).columns(),
    )


def usage_columns(usage: Usage | None) -> dict[str, float | int | None]:
    """The ``UsageStatsColumns`` values of ``usage`` (all empty without samples)."""
    empty = Stat()
    stats = {
        "cpu_{}_cores": usage.cpu if usage else empty,
        "memory_{}_mib": usage.memory_mib if usage else empty,
        "gpu_util_{}": usage.gpu_util if usage else empty,
        "gpu_memory_{}_mib": usage.gpu_memory_mib if usage else empty,
    }
    columns: dict[str, float | int | None] = {
        "samples": usage.samples if usage else 0,
        "gpu_memory_total_mib": usage.gpu_memory_total_mib if usage else None,
    }
    for pattern, stat in stats.items():
        for name in ("mean", "p50", "p95", "max"):
            columns[pattern.format(name)] = getattr(stat, name)
    return columns


def _event_counts(session: ReadSession, job_ids: list[int]) -> dict[int, dict[int | None, Counter]]:
    """Per job, ``{node_id or None: Counter(oom_count=.., failure_count=..)}`` of its events."""
    rows = session.execute(
        select(EventRow.job_id, EventRow.node_id, EventRow.kind, func.count())
        .where(EventRow.job_id.in_(job_ids), EventRow.kind.in_(COUNTED_EVENTS))
        .group_by(EventRow.job_id, EventRow.node_id, EventRow.kind)
    )
    counts: dict[int, dict[int | None, Counter]] = {}
    for job_id, node_id, kind, count in rows:
        counts.setdefault(job_id, {}).setdefault(node_id, Counter())[COUNTED_EVENTS[kind]] += count
    return counts


def _ended_at(job: JobRow, sample_times: list[datetime]) -> datetime:
    if job.finished_at:
        return as_utc(job.finished_at)
    if sample_times:
        return max(sample_times)
    return as_utc(job.started_at or job.created_at)
