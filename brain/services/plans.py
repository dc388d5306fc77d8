"""Run a stage's optimizers for a job and keep the resulting ScalePlan.

The service gathers the context (the optimizers never touch the store), runs the
stage's pipeline on it (``brain.optimizing.pipeline.run_stage``: select, configure,
propose, combine, bound) and stores the plan. A newer plan that changes
something supersedes the job's older proposed ones; an empty one does not, and is stored
as ``no_change`` rather than ``proposed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.db.engine import ReadSession
from brain.db.models import EventRow, JobRow, ScalePlanRow
from brain.domain import EventKind, PlanStatus, Stage, utcnow
from brain.errors import Conflict, InvalidInput, NotFound
from brain.optimizing import (
    ContextInput,
    OptimizerContext,
    OptimizerRegistry,
    Proposal,
    reads_of,
)
from brain.optimizing.pipeline import run_stage, select_optimizers
from brain.optimizing.proposal import PlanBody
from brain.optimizing.roles import effective_roles
from brain.optimizing.sizing_model import SizingModel
from brain.services import plan_size
from brain.services.desired_state import apply_plan
from brain.services.locks import lock_job
from brain.services.optimizer_context import build_context
from brain.services.ps_tier import PsHosts, ps_tier

# Status changes a job master may report; superseded is Brain's own.
ALLOWED_TRANSITIONS: dict[str, set[str]] = {
    PlanStatus.proposed: {PlanStatus.applied, PlanStatus.rejected, PlanStatus.failed},
    PlanStatus.applied: {PlanStatus.failed},
}


@dataclass(frozen=True)
class Optimized:
    """A stored plan and the context its optimizers saw (None: a replayed OOM report,
    answered with the plan of the first one)."""

    plan: ScalePlanRow
    context: OptimizerContext | None


def optimize(
    session: Session,
    job: JobRow,
    registry: OptimizerRegistry,
    settings: Settings,
    stage: Stage,
    optimizer_names: list[str] | None = None,
    overrides: dict[str, dict] | None = None,
    node: str | None = None,
    sizing_model: SizingModel | None = None,
    readable: frozenset[str] | None = None,
    ps_hosts: PsHosts | None = None,
) -> Optimized:
    """Propose, bound and store a plan for ``job`` at ``stage`` (``sizing_model``: the
    learned recommender, when the caller has one loaded); one at a time per job, so
    concurrent calls leave one plan proposed and answer an OOM event once. The context
    comes back too, so a caller needing the job's history or roles does not query them
    again. ``readable``: the namespaces the caller may read (``None``: every one), the
    most other jobs' runs the plan may learn from (see ``brain.history.scope``);
    ``ps_hosts``: names the PS addresses of a plan whose optimizers named none."""
    lock_job(session, job)
    if stage == Stage.oom:
        if not node:
            raise InvalidInput("stage oom needs the node that was OOM-killed", field="node")
        answered = _plan_for_latest_oom(session, job, node)
        if answered is not None:  # a replayed report: the event already has its plan
            return Optimized(answered, None)
        if not _has_oom(session, job, node):
            # An empty "nothing to relaunch" plan would look like an answer to an OOM that
            # never was (and pile up on every retry): refuse, and store nothing.
            raise Conflict(
                f"no OOM recorded for node {node!r} of job {job.uid!r}: report it first "
                f"(POST /api/v1/jobs/{job.uid}/events with kind oom)",
                field="node",
            )
    # Selected first: an unknown optimizer is refused before any query, and the costly
    # inputs are built only when an optimizer that runs reads them.
    selected = select_optimizers(registry, stage, optimizer_names, settings)
    reading = set().union(*(reads_of(o) for o in selected))
    context = build_context(
        session,
        job,
        stage,
        settings,
        node=node,
        sizing_model=sizing_model,
        readable=readable,
        memory_peaks=ContextInput.memory_peaks in reading,
    )
    result = run_stage(
        registry, stage, context, settings, optimizer_names, overrides, selected=selected
    )
    bounded = result.proposal
    if bounded.source_event_id is not None:
        existing = session.scalar(
            select(ScalePlanRow).where(ScalePlanRow.source_event_id == bounded.source_event_id)
        )
        if existing is not None:  # this event already has its answer
            return Optimized(existing, context)
    body = plan_body(bounded, result.optimizers, context)
    if not body.ps_hosts and ps_hosts is not None:
        body.ps_hosts = ps_hosts(ps_tier(session, job), body)
    body = plan_size.bounded(body)
    plan = _store(session, job, stage, body, bounded.source_event_id, not bounded.is_empty)
    return Optimized(plan, context)


def _has_oom(session: Session, job: JobRow, node: str) -> bool:
    return (
        session.scalar(
            select(EventRow.id)
            .where(
                EventRow.job_id == job.id,
                EventRow.kind == EventKind.oom.value,
                EventRow.node_name == node,
            )
            .limit(1)
        )
        is not None
    )


def _plan_for_latest_oom(session: Session, job: JobRow, node: str) -> ScalePlanRow | None:
    latest_oom = (
        select(EventRow.id)
        .where(
            EventRow.job_id == job.id,
            EventRow.kind == EventKind.oom.value,
            EventRow.node_name == node,
        )
        .order_by(EventRow.ts.desc(), EventRow.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    return session.scalar(select(ScalePlanRow).where(ScalePlanRow.source_event_id == latest_oom))


def plan_body(proposal: Proposal, optimizer_names: list[str], context) -> PlanBody:
    """What the plan says. Role fields an optimizer left open keep the job's values."""
    roles = effective_roles(proposal.roles, context.job, context.nodes) if proposal.roles else {}
    return PlanBody(
        roles={role: spec for role, spec in roles.items() if role in proposal.roles},
        launch=list(proposal.launch),
        remove=list(proposal.remove),
        migrate=list(proposal.migrate),
        ps_hosts=list(proposal.ps_hosts),
        reasons=list(proposal.reasons),
        optimizers=optimizer_names,
    )


def _store(
    session: Session,
    job: JobRow,
    stage: Stage,
    body: PlanBody,
    source_event_id: int | None,
    has_actions: bool,
) -> ScalePlanRow:
    now = utcnow()
    # A plan that changes nothing is no proposal: a job master has nothing to apply.
    status = PlanStatus.proposed if has_actions else PlanStatus.no_change
    plan = ScalePlanRow(
        job_id=job.id,
        stage=stage.value,
        status=status.value,
        body=body,
        source_event_id=source_event_id,
        created_at=now,
        updated_at=now,
    )
    if source_event_id is None:
        # No event to answer, so nothing a concurrent request can take first (the event
        # is the only unique key): no savepoint (two fewer round trips).
        _supersede_and_add(session, job, plan, has_actions)
        session.flush()
        return plan
    try:
        # Supersede and insert together in a savepoint: if a concurrent request answered
        # the same event first, both are undone and the rest of the transaction stays.
        with session.begin_nested():
            _supersede_and_add(session, job, plan, has_actions)
    except IntegrityError:
        # A concurrent request answered the same event first: return its plan.
        existing = session.scalar(
            select(ScalePlanRow).where(ScalePlanRow.source_event_id == source_event_id)
        )
        if existing is None:
            raise
        return existing
    return plan


def _supersede_and_add(session: Session, job: JobRow, plan: ScalePlanRow, has_actions: bool):
    if has_actions:
        # Only a plan that changes something replaces pending proposals; a "nothing to
        # change" answer must not cancel a proposal the job master has yet to apply, and
        # an OOM fix (a plan answering an event) stays pending until it is applied.
        session.execute(
            update(ScalePlanRow)
            .where(
                ScalePlanRow.job_id == job.id,
                ScalePlanRow.status == PlanStatus.proposed.value,
                ScalePlanRow.source_event_id.is_(None),
            )
            .values(status=PlanStatus.superseded.value, updated_at=plan.created_at)
        )
    session.add(plan)


def get_plan(session: ReadSession, job: JobRow, plan_id: int) -> ScalePlanRow:
    plan = session.scalar(
        select(ScalePlanRow).where(ScalePlanRow.job_id == job.id, ScalePlanRow.id == plan_id)
    )
    if plan is None:
        raise NotFound(f"job {job.uid!r} has no plan {plan_id}", field="id")
    return plan


def list_plans(
    session: ReadSession, job: JobRow, limit: int, before_id: int | None = None
) -> list[ScalePlanRow]:
    """Plans newest first; ``before_id`` pages backwards."""
    stmt = select(ScalePlanRow).where(ScalePlanRow.job_id == job.id)
    if before_id is not None:
        stmt = stmt.where(ScalePlanRow.id < before_id)
    return list(session.scalars(stmt.order_by(ScalePlanRow.id.desc()).limit(limit)))


def next_plan_after(session: Session, job_id: int, after_id: int) -> ScalePlanRow | None:
    """The oldest plan after ``after_id`` that was neither superseded nor a plan that
    changes nothing: an agent walking the ids sees every change in order (an OOM fix is
    never skipped)."""
    return session.scalar(
        select(ScalePlanRow)
        .where(
            ScalePlanRow.job_id == job_id,
            ScalePlanRow.id > after_id,
            ScalePlanRow.status.not_in([PlanStatus.superseded.value, PlanStatus.no_change.value]),
        )
        .order_by(ScalePlanRow.id)
        .limit(1)
    )


def plans_from(session: Session, floor_id: int) -> list[tuple[int, str]]:
    """(plan id, job uid) of every plan with an id above ``floor_id``, oldest first."""
    rows = session.execute(
        select(ScalePlanRow.id, JobRow.uid)
        .join(JobRow, JobRow.id == ScalePlanRow.job_id)
        .where(ScalePlanRow.id > floor_id)
        .order_by(ScalePlanRow.id)
    )
    return [(plan_id, uid) for plan_id, uid in rows]


def newest_plan_id(session: Session) -> int:
    return session.scalar(select(func.max(ScalePlanRow.id))) or 0


def set_status(
    session: Session,
    job: JobRow,
    plan_id: int,
    status: PlanStatus,
    message: str | None,
    applied_at: datetime | None = None,
) -> ScalePlanRow:
    """Record what the job master did with a plan; repeating the same report is a no-op.

    An applied plan becomes the job's desired state (``desired_state.apply_plan``), and
    its ``applied_at`` (the report's time, else now) starts the optimizers' cooldowns.
    """
    lock_job(session, job)  # concurrent reports see each other's outcome
    plan = get_plan(session, job, plan_id)
    if plan.status == status.value:
        return plan
    if status.value not in ALLOWED_TRANSITIONS.get(plan.status, set()):
        raise Conflict(
            f"plan {plan_id} is {plan.status}; it cannot become {status.value}", "status"
        )
    plan.status = status.value
    plan.status_message = message
    plan.updated_at = utcnow()
    if status == PlanStatus.applied:
        plan.applied_at = applied_at or plan.updated_at
        apply_plan(session, job, plan.body)
    session.flush()
    return plan
