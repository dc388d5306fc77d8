"""The cluster's state (free capacity, pending demand): the newest per source, replaced
each time it is recorded, so the table stays one row per source. The collector records
what Prometheus shows, ``POST /api/v1/cluster/state`` what a platform pushes;
``GET /api/v1/cluster/state`` and the running stage read the freshest.

For the running stage, ``cluster_view`` also describes, while the cluster is short, every
running job that could give workers back (``ElasticJob``), so each job's
``cluster_shortage`` ranks all of them alike.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, replace
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.db.chunks import in_list_chunks
from brain.db.engine import ReadSession
from brain.db.models import ClusterStateRow, JobRow, NodeRow, ScalePlanRow, SpeedSampleRow
from brain.domain import (
    ROLE_WORKER,
    ClusterState,
    JobStatus,
    PlanStatus,
    Resources,
    RoleSpec,
    Stage,
    as_utc,
)
from brain.history.scope import in_namespaces
from brain.history.views import job_view
from brain.optimizing.cluster import ClusterView, ElasticJob, marginal_gain
from brain.optimizing.context import JobView, NodeView, SpeedSample
from brain.optimizing.roles import current_role
from brain.services.nodes import GONE_NODE_STATUSES

# Stages that size a job before the running stage grows it: workers above the count
# they set are the running stage's additions (elastic, when no min_count says more).
SIZING_STAGES = frozenset({Stage.create, Stage.estimate})


def record_cluster_state(session: Session, state: ClusterState) -> None:
    """Replace ``state.source``'s row (``merge``: insert or update by primary key)."""
    session.merge(ClusterStateRow(**asdict(state)))
    session.flush()


def latest_cluster_state(session: ReadSession) -> ClusterState | None:
    """The freshest state of any source; ``None`` before anything was recorded."""
    row = session.scalars(
        select(ClusterStateRow).order_by(ClusterStateRow.ts.desc()).limit(1)
    ).first()
    if row is None:
        return None
    return ClusterState(
        source=row.source,
        ts=as_utc(row.ts),
        nodes=row.nodes,
        free_cpu=row.free_cpu,
        free_memory_mib=row.free_memory_mib,
        free_gpu=row.free_gpu,
        pending_pods=row.pending_pods,
        pending_cpu=row.pending_cpu,
        pending_memory_mib=row.pending_memory_mib,
        pending_gpu=row.pending_gpu,
        queued_jobs=row.queued_jobs,
    )


def cluster_view(
    session: Session,
    settings: Settings,
    now: datetime,
    namespaces: frozenset[str | None] | None = None,
) -> ClusterView | None:
    """The freshest state if it is at most ``BRAIN_CLUSTER_STATE_MAX_AGE_S`` from ``now``
    (the job's clock), with the running jobs of ``namespaces`` (``None``: every one) that
    could give workers back when it is short; ``None`` without a fresh state."""
    state = latest_cluster_state(session)
    policy = settings.cluster
    if state is None or abs((now - state.ts).total_seconds()) > policy.cluster_state_max_age_s:
        return None
    view = ClusterView(state, policy.short_margin)
    if not view.shortfall():
        return view
    peers = elastic_jobs(session, settings.speed_window_s, namespaces)
    return replace(view, peers=tuple(peers))


def elastic_jobs(
    session: Session, speed_window_s: int, namespaces: frozenset[str | None] | None = None
) -> list[ElasticJob]:
    """Every running job with workers in ``namespaces`` (``None``: every namespace):
    count, size, floor, marginal gain, last change."""
    jobs = list(
        session.scalars(
            select(JobRow).where(
                JobRow.status == JobStatus.running.value,
                in_namespaces(JobRow.namespace, namespaces),
            )
        )
    )
    ids = [job.id for job in jobs]
    if not ids:
        return []
    workers: dict[int, list[NodeView]] = defaultdict(list)
    changes: dict[int, list[ScalePlanRow]] = defaultdict(list)
    # Per piece of the running jobs' ids (brain.db.chunks): a job's rows all come with
    # its piece, its plans in order.
    for chunk in in_list_chunks(ids):
        for node in session.scalars(
            select(NodeRow).where(
                NodeRow.job_id.in_(chunk),
                NodeRow.role == ROLE_WORKER,
                NodeRow.status.not_in(GONE_NODE_STATUSES),
            )
        ):
            workers[node.job_id].append(
                NodeView(node.name, node.role, node.index, node.cpu, node.memory_mib, node.gpu)
            )
        for plan in session.scalars(
            select(ScalePlanRow)
            .where(
                ScalePlanRow.job_id.in_(chunk),
                ScalePlanRow.status == PlanStatus.applied.value,
                ScalePlanRow.applied_at.is_not(None),
            )
            .order_by(ScalePlanRow.applied_at, ScalePlanRow.id)
        ):
            if ROLE_WORKER in plan.body.roles:
                changes[plan.job_id].append(plan)
    peers = []
    for job in jobs:
        view = job_view(job)
        spec = current_role(ROLE_WORKER, view, workers[job.id])
        count = spec.count or 0
        if count == 0:
            continue
        gain, measured = marginal_gain(_recent_speed(session, job.id, speed_window_s), count)
        applied = changes[job.id]
        peers.append(
            ElasticJob(
                uid=job.uid,
                workers=count,
                floor=_floor(view, applied, count),
                worker=Resources(spec.cpu or 0.0, spec.memory_mib or 0.0, spec.gpu or 0.0),
                marginal_gain=gain,
                gain_measured=measured,
                changed_at=as_utc(applied[-1].applied_at) if applied else None,
                namespace=job.namespace,
            )
        )
    return peers


def _floor(job: JobView, applied: list[ScalePlanRow], count: int) -> int:
    """The workers a job keeps: its ``min_count``; without one, the count its create or
    estimate plan sized it to (the latest applied), else its registered count while no
    running plan changed it; with neither known, all it runs."""
    min_count = job.bounds_of(ROLE_WORKER).min_count
    if min_count is not None:
        return min_count
    sized = [p for p in applied if Stage(p.stage) in SIZING_STAGES]
    if sized:
        return sized[-1].body.roles[ROLE_WORKER].count or count
    if applied:  # running plans rewrote the registered count
        return count
    return job.roles.get(ROLE_WORKER, RoleSpec()).count or count


def _recent_speed(session: Session, job_id: int, seconds: int) -> list[SpeedSample]:
    latest = session.scalar(
        select(func.max(SpeedSampleRow.ts)).where(SpeedSampleRow.job_id == job_id)
    )
    if latest is None:
        return []
    rows = session.scalars(
        select(SpeedSampleRow)
        .where(
            SpeedSampleRow.job_id == job_id,
            SpeedSampleRow.ts >= latest - timedelta(seconds=seconds),
        )
        .order_by(SpeedSampleRow.ts)
    )
    return [SpeedSample(s.ts, s.global_step, s.steps_per_sec, s.workers) for s in rows]
