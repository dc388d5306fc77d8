"""A site's finished jobs as runs to replay: summaries, the main role, its peak node's samples.

One finished job with a final summary is one run. Its **main role** is the role holding
most of its requested GPU-hours, then core-hours, then GiB-hours; the run is sized per
node of that role (its request per node) and replayed on the series of the role's node
with the highest memory peak, the node a size must cover. Runs of the window are
replayed; the runs of their groups that ended in the ``history_days`` before it are
loaded too, as the history the create stage sizes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import select

from brain.db.engine import ReadSession
from brain.db.models import (
    JobRow,
    JobSummaryRow,
    NodeSampleRow,
    NodeSummaryRow,
    RoleSummaryRow,
)
from brain.domain import as_utc
from brain.history.scope import in_namespaces
from brain.replay.runs import Run, Submission

# Sample ids are read in chunks: one IN list per query stays small.
CHUNK = 2000


@dataclass(frozen=True)
class SiteRun:
    """A finished job, its main role's request and resource-hours, and its replay inputs."""

    job_id: int
    namespace: str | None
    group_key: str
    start: datetime
    ended_at: datetime
    in_window: bool
    role: str
    node_count: int
    run_hours: float
    requested_core_h: float
    used_core_h: float
    requested_gib_h: float
    used_gib_h: float
    requested_gpu_h: float
    used_gpu_h: float
    peak_node_id: int | None
    run: Run
    gpu_type: str | None = None
    # The main role's GPUs per node and what DCGM measured of them (mean utilization 0..1,
    # the largest pod's peak memory and its cards' memory, MiB); None: not measured.
    gpu_request: float = 0.0
    gpu_util_mean: float | None = None
    gpu_memory_max_mib: float | None = None
    gpu_memory_total_mib: float | None = None
    # Its savings replay is stored with its summary (brain.savings.stored).
    replayed: bool = False


def load_runs(
    session: ReadSession,
    since: datetime,
    *,
    namespaces: frozenset[str | None] | frozenset[str] | None = None,
    group: str | None = None,
    history_days: int = 30,
) -> list[SiteRun]:
    """The runs that ended since ``since`` (``in_window``) and their groups' earlier ones,
    ordered by group then start. ``namespaces``: only jobs of these (``None`` in the set:
    jobs without one; ``None``: every job)."""
    earliest = since - timedelta(days=history_days)
    query = (
        select(
            JobSummaryRow.job_id,
            JobRow.namespace,
            JobSummaryRow.group_key,
            JobSummaryRow.started_at,
            JobRow.created_at,
            JobSummaryRow.ended_at,
            JobSummaryRow.run_seconds,
            JobSummaryRow.gpu_type,
            JobSummaryRow.savings_computed_at,
        )
        .join(JobRow, JobRow.id == JobSummaryRow.job_id)
        .where(JobSummaryRow.final.is_(True), JobSummaryRow.ended_at >= earliest)
    )
    if namespaces is not None:
        query = query.where(in_namespaces(JobRow.namespace, frozenset(namespaces)))
    if group is not None:
        query = query.where(JobSummaryRow.group_key == group)
    jobs = session.execute(query).all()
    ids = [j.job_id for j in jobs]
    roles = _main_roles(session, ids)
    peaks = _peak_nodes(session, ids, roles)
    found = []
    for job in jobs:
        role = roles.get(job.job_id)
        if role is None:
            continue
        peak = peaks.get(job.job_id)
        start = as_utc(job.started_at or job.created_at)
        ended = as_utc(job.ended_at)
        run_hours = float(job.run_seconds) / 3600.0
        found.append(
            SiteRun(
                job_id=job.job_id,
                namespace=job.namespace,
                group_key=job.group_key,
                start=start,
                ended_at=ended,
                in_window=ended >= since,
                role=role.role,
                node_count=int(role.node_count),
                run_hours=run_hours,
                requested_core_h=float(role.requested_core_hours),
                used_core_h=float(role.used_core_hours),
                requested_gib_h=float(role.requested_gib_hours),
                used_gib_h=float(role.used_gib_hours),
                requested_gpu_h=float(role.requested_gpu_hours),
                used_gpu_h=float(role.used_gpu_hours),
                peak_node_id=None if peak is None else peak.node_id,
                run=_run(job.job_id, job.group_key, start, run_hours, role, peak),
                gpu_type=job.gpu_type,
                gpu_request=float(role.gpu_request or 0.0),
                gpu_util_mean=role.gpu_util_mean,
                gpu_memory_max_mib=role.gpu_memory_max_mib,
                gpu_memory_total_mib=role.gpu_memory_total_mib,
                replayed=job.savings_computed_at is not None,
            )
        )
    found.sort(key=lambda r: (r.group_key, r.start, r.job_id))
    return found


def histories(runs: Sequence[SiteRun], across_namespaces: bool) -> list[list[SiteRun]]:
    """``runs`` (as ``load_runs`` orders them) as the histories a create stage sizes
    from, each oldest first: a group's runs in one namespace (jobs without one form a
    namespace of their own), so one namespace's runs never size another's replay; with
    ``across_namespaces`` (``BRAIN_HISTORY_ACROSS_NAMESPACES``) a group's runs of every
    namespace loaded, as the plans of such a site pool them."""
    found: dict[tuple[str, str | None], list[SiteRun]] = {}
    for run in runs:
        key = (run.group_key, None if across_namespaces else run.namespace)
        found.setdefault(key, []).append(run)
    return list(found.values())


# The role and node summary columns read (whole ORM rows cost most of the load).
ROLE_FIELDS = (
    RoleSummaryRow.job_id,
    RoleSummaryRow.role,
    RoleSummaryRow.node_count,
    RoleSummaryRow.cpu_request_cores,
    RoleSummaryRow.memory_request_mib,
    RoleSummaryRow.requested_core_hours,
    RoleSummaryRow.used_core_hours,
    RoleSummaryRow.requested_gib_hours,
    RoleSummaryRow.used_gib_hours,
    RoleSummaryRow.requested_gpu_hours,
    RoleSummaryRow.used_gpu_hours,
    RoleSummaryRow.cpu_mean_cores,
    RoleSummaryRow.cpu_p95_cores,
    RoleSummaryRow.cpu_max_cores,
    RoleSummaryRow.memory_mean_mib,
    RoleSummaryRow.memory_max_mib,
    RoleSummaryRow.gpu_request,
    RoleSummaryRow.gpu_util_mean,
    RoleSummaryRow.gpu_memory_max_mib,
    RoleSummaryRow.gpu_memory_total_mib,
)
NODE_FIELDS = (
    NodeSummaryRow.job_id,
    NodeSummaryRow.node_id,
    NodeSummaryRow.role,
    NodeSummaryRow.cpu_mean_cores,
    NodeSummaryRow.cpu_p95_cores,
    NodeSummaryRow.cpu_max_cores,
    NodeSummaryRow.memory_mean_mib,
    NodeSummaryRow.memory_max_mib,
)


def _main_roles(session: ReadSession, ids: list[int]) -> dict[int, Any]:
    best: dict[int, Any] = {}
    for chunk in _chunks(ids):
        for row in session.execute(select(*ROLE_FIELDS).where(RoleSummaryRow.job_id.in_(chunk))):
            weight = _weight(row)
            held = best.get(row.job_id)
            if held is None or weight > _weight(held):
                best[row.job_id] = row
    return best


def _weight(row) -> tuple:
    # Most GPU-hours, then core-hours, then GiB-hours; then the first role name.
    return (
        row.requested_gpu_hours,
        row.requested_core_hours,
        row.requested_gib_hours,
        [-ord(c) for c in row.role],
    )


def _peak_nodes(session: ReadSession, ids: list[int], roles: dict[int, Any]) -> dict[int, Any]:
    """Per job, the main role's node with the highest memory peak."""
    best: dict[int, Any] = {}
    for chunk in _chunks(ids):
        rows = session.execute(select(*NODE_FIELDS).where(NodeSummaryRow.job_id.in_(chunk)))
        for row in rows:
            role = roles.get(row.job_id)
            if role is None or row.role != role.role:
                continue
            held = best.get(row.job_id)
            if held is None or (row.memory_max_mib or 0.0) > (held.memory_max_mib or 0.0):
                best[row.job_id] = row
    return best


def _run(
    job_id: int,
    group_key: str,
    start: datetime,
    run_hours: float,
    role: Any,
    peak: Any,
) -> Run:
    def given(value: float | None) -> float | None:
        return float(value) if value else None

    source = peak if peak is not None else role
    return Run(
        index=job_id,
        submission=Submission(
            workload=group_key,
            start=start,
            req_cpu=given(role.cpu_request_cores),
            req_memory_mib=given(role.memory_request_mib),
            req_gpu=None,
            req_gpu_memory_mib=None,
            gpu_mem_total_mib=None,
        ),
        duration_h=run_hours,
        cpu_mean=source.cpu_mean_cores,
        cpu_p95=source.cpu_p95_cores,
        cpu_max=source.cpu_max_cores,
        mem_mean=source.memory_mean_mib,
        mem_max=source.memory_max_mib,
        gpu_util_mean=None,
        gpu_mem_mib_max=None,
    )


@dataclass(frozen=True)
class NodeSeries:
    ts: np.ndarray  # Unix seconds, int64
    cpu: np.ndarray
    mem: np.ndarray


def load_series(session: ReadSession, node_ids: Sequence[int]) -> dict[int, NodeSeries]:
    """The stored samples of ``node_ids``, oldest first."""
    found: dict[int, NodeSeries] = {}
    for chunk in _chunks(list(node_ids)):
        rows = session.execute(
            select(
                NodeSampleRow.node_id, NodeSampleRow.ts, NodeSampleRow.cpu, NodeSampleRow.memory_mib
            )
            .where(NodeSampleRow.node_id.in_(chunk))
            .order_by(NodeSampleRow.node_id, NodeSampleRow.ts)
        ).all()
        position = 0
        while position < len(rows):
            node = rows[position].node_id
            end = position
            while end < len(rows) and rows[end].node_id == node:
                end += 1
            mine = rows[position:end]
            found[node] = NodeSeries(
                ts=np.array([int(as_utc(r.ts).timestamp()) for r in mine], dtype=np.int64),
                cpu=np.array([r.cpu for r in mine], dtype=float),
                mem=np.array([r.memory_mib for r in mine], dtype=float),
            )
            position = end
    return found


def _chunks(values: list[int]):
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]
