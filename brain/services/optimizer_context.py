"""Build the read-only OptimizerContext of a job from the store."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.db.models import EventRow, JobRow, NodeRow, NodeSampleRow, ScalePlanRow, SpeedSampleRow
from brain.domain import NODE_MEASUREMENTS, PlanStatus, RoleSpec, Stage, as_utc, utcnow
from brain.history.plausible import SECONDS_PER_DAY
from brain.history.related import RelatedQuery
from brain.history.scope import history_namespaces
from brain.history.views import job_view
from brain.optimizing.context import (
    EventView,
    MemoryPeak,
    NodeView,
    OptimizerContext,
    PlanView,
)
from brain.optimizing.context import NodeSample as NodeSampleView
from brain.optimizing.context import SpeedSample as SpeedSampleView
from brain.optimizing.roles import effective_roles
from brain.optimizing.sizing_model import SizingModel
from brain.services.cluster import cluster_view
from brain.services.nodes import FAILED_NODE_STATUSES, GONE_NODE_STATUSES
from brain.summaries.store import fresh_related

RECENT_EVENTS = 1000
RECENT_PLANS = 100


def build_context(
    session: Session,
    job: JobRow,
    stage: Stage,
    settings: Settings,
    node: str | None = None,
    sizing_model: SizingModel | None = None,
    readable: frozenset[str] | None = None,
    memory_peaks: bool = True,
) -> OptimizerContext:
    """The job, its nodes, a recent window of samples, events, plans and (at create) history.

    Sample windows end at the job's latest stored point rather than at the wall clock,
    so that loaded-after-the-fact history is optimized the same way as live data; for
    the same reason ``now`` is the job's time: its latest sample (the wall clock only
    before the first one). Cooldowns and extrapolations run on that clock.

    Other jobs (related history, cluster-shortage peers) come only from the namespaces
    ``brain.history.scope`` allows: the job's own, unless pooling is configured, and
    then only those the caller may read (``readable``; ``None``: every namespace).

    ``memory_peaks``: whether to build the running stage's memory peaks (a grouped query
    over a day of samples), which only an optimizer that reads them needs.
    """
    nodes = list(
        session.scalars(select(NodeRow).where(NodeRow.job_id == job.id).order_by(NodeRow.id))
    )
    names = {n.id: n.name for n in nodes}
    view = job_view(job)
    namespaces = history_namespaces(job.namespace, settings.history_across_namespaces, readable)
    history = ()
    if stage == Stage.create:
        history = tuple(_related(session, job, settings, settings.history_jobs, namespaces))
    latest = _latest_samples(session, job)
    now = _job_time(latest)
    return OptimizerContext(
        stage=stage,
        now=now,
        job=view,
        nodes=tuple(_node_view(n) for n in nodes if _live(n) or n.name == node),
        failed_nodes=tuple(
            _node_view(n) for n in nodes if n.status in FAILED_NODE_STATUSES and n.name != node
        ),
        gone_nodes=tuple(
            _node_view(n)
            for n in nodes
            if not _live(n) and n.status not in FAILED_NODE_STATUSES and n.name != node
        ),
        samples=tuple(
            _recent_node_samples(session, job, names, latest.node, settings.sample_window_s)
        ),
        speed=tuple(_recent_speed(session, job, latest.speed, settings.speed_window_s)),
        events=tuple(_events(session, job)),
        plans=tuple(_plans(session, job)),
        history=history,
        node_max=settings.node_max,
        node=node,
        sizing_model=sizing_model,
        cluster=cluster_view(session, settings, now, namespaces)
        if stage == Stage.running
        else None,
        memory_peaks=tuple(
            _memory_peaks(session, job, names, latest.node, settings.memory_peak_window_s)
        )
        if stage == Stage.running and memory_peaks
        else (),
    )


@dataclass(frozen=True)
class LatestSamples:
    """The time of the job's latest node and speed samples (None: none stored)."""

    node: datetime | None
    speed: datetime | None


def _latest_samples(session: Session, job: JobRow) -> LatestSamples:
    return LatestSamples(
        session.scalar(select(func.max(NodeSampleRow.ts)).where(NodeSampleRow.job_id == job.id)),
        session.scalar(select(func.max(SpeedSampleRow.ts)).where(SpeedSampleRow.job_id == job.id)),
    )


def _job_time(latest: LatestSamples) -> datetime:
    """The time of the job's latest node or speed sample; the wall clock without any."""
    found = [as_utc(ts) for ts in (latest.node, latest.speed) if ts is not None]
    return max(found) if found else utcnow()


def _live(node: NodeRow | NodeView) -> bool:
    return node.status not in GONE_NODE_STATUSES


def _related(
    session: Session,
    job: JobRow,
    settings: Settings,
    limit: int,
    namespaces: frozenset[str | None] | None,
):
    query = RelatedQuery(
        namespaces=namespaces,
        max_run_s=settings.history_max_run_days * SECONDS_PER_DAY,
        user=job.user,
        dataset=job.dataset,
        group_key=job.group_key,
        name=job.name,
        # The same runs a suggestion for this GPU type uses: filtered before the cap.
        gpu_type=job.gpu_type,
        min_run_s=settings.history_min_run_s,
        before=job.created_at,
        window_days=settings.history_window_days,
        limit=limit,
    )
    # A related job that finished moments ago has no summary yet: it is written now.
    return fresh_related(session, query).jobs


def current_roles(session: Session, job: JobRow) -> dict[str, RoleSpec]:
    """Each role as it runs now: the job's role spec, completed from its live nodes."""
    nodes = session.scalars(select(NodeRow).where(NodeRow.job_id == job.id).order_by(NodeRow.id))
    return effective_roles({}, job_view(job), [_node_view(n) for n in nodes if _live(n)])


def roles_in(context: OptimizerContext) -> dict[str, RoleSpec]:
    """``current_roles`` from a context already built (no query): its live nodes."""
    return effective_roles({}, context.job, [n for n in context.nodes if _live(n)])


def _node_view(node: NodeRow) -> NodeView:
    return NodeView(
        name=node.name,
        role=node.role,
        index=node.index,
        cpu=node.cpu,
        memory_mib=node.memory_mib,
        gpu=node.gpu,
        status=node.status,
    )


def _recent_node_samples(
    session: Session, job: JobRow, names: dict[int, str], latest: datetime | None, seconds: int
):
    if latest is None:
        return []
    rows = session.execute(
        select(
            NodeSampleRow.node_id,
            NodeSampleRow.ts,
            *(getattr(NodeSampleRow, m) for m in NODE_MEASUREMENTS),
        )
        .where(
            NodeSampleRow.job_id == job.id,
            NodeSampleRow.ts >= latest - timedelta(seconds=seconds),
        )
        .order_by(NodeSampleRow.ts, NodeSampleRow.node_id)
    )
    # NodeSample's fields are the node, the time and NODE_MEASUREMENTS, in this order.
    return [NodeSampleView(names[node_id], ts, *measured) for node_id, ts, *measured in rows]


def _memory_peaks(
    session: Session, job: JobRow, names: dict[int, str], latest: datetime | None, seconds: int
) -> list[MemoryPeak]:
    """Each node's highest memory use over the window, from its first sample in it."""
    if latest is None:
        return []
    rows = session.execute(
        select(
            NodeSampleRow.node_id, func.max(NodeSampleRow.memory_mib), func.min(NodeSampleRow.ts)
        )
        .where(
            NodeSampleRow.job_id == job.id,
            NodeSampleRow.ts >= latest - timedelta(seconds=seconds),
            NodeSampleRow.memory_mib.is_not(None),
        )
        .group_by(NodeSampleRow.node_id)
        .order_by(NodeSampleRow.node_id)
    )
    return [MemoryPeak(names[node_id], peak, as_utc(since)) for node_id, peak, since in rows]


def _recent_speed(session: Session, job: JobRow, latest: datetime | None, seconds: int):
    if latest is None:
        return []
    rows = session.scalars(
        select(SpeedSampleRow)
        .where(
            SpeedSampleRow.job_id == job.id,
            SpeedSampleRow.ts >= latest - timedelta(seconds=seconds),
        )
        .order_by(SpeedSampleRow.ts)
    )
    return [SpeedSampleView(s.ts, s.global_step, s.steps_per_sec, s.workers) for s in rows]


def _events(session: Session, job: JobRow) -> list[EventView]:
    rows = session.scalars(
        select(EventRow)
        .where(EventRow.job_id == job.id)
        .order_by(EventRow.id.desc())
        .limit(RECENT_EVENTS)
    )
    return sorted(
        (EventView(e.id, e.ts, e.kind, e.node_name or None, e.detail) for e in rows),
        key=lambda e: (e.ts, e.id),
    )


def _plans(session: Session, job: JobRow) -> list[PlanView]:
    rows = session.scalars(
        select(ScalePlanRow)
        .where(ScalePlanRow.job_id == job.id)
        .order_by(ScalePlanRow.id.desc())
        .limit(RECENT_PLANS)
    )
    return sorted((_plan_view(p) for p in rows), key=lambda p: p.id)


def _plan_view(plan: ScalePlanRow) -> PlanView:
    body = plan.body
    return PlanView(
        id=plan.id,
        stage=Stage(plan.stage),
        status=PlanStatus(plan.status),
        created_at=plan.created_at,
        roles=dict(body.roles),
        launch=tuple(body.launch),
        remove=tuple(body.remove),
        migrate=tuple(body.migrate),
        optimizers=tuple(body.optimizers),
        source_event_id=plan.source_event_id,
        status_message=plan.status_message,
        applied_at=plan.applied_at,
        reasons=tuple(body.reasons),
    )
