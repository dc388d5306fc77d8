"""Which new node is the replacement of a migrated one, and so has its migrated size.

A master migrates a node by relaunching it, and may name the new pod anew (DLRover's
master gives a migrated PS the next id: ``<job>-edljob-ps-0`` comes back as
``...-ps-2``). When a master registers the new node, it says its size. When the node is
first seen in samples instead (the Prometheus collector, a sample push), Brain creates
it; sized as its role, it would lose what the migration gave it (a hot PS moved to 12
cores seen as 8, and migrated again), while the migrated node, which no longer runs,
would count as running.

A new node of a role that already runs as many nodes as the role's count is not a
scale-up (an applied plan that adds nodes raises the count first): it replaces a node
an applied plan migrated. It takes that node's size (the migrated size, which the
applied plan wrote on it), and the migrated node is marked ``migrated``: gone, replaced.
Migrated nodes are paired oldest migration first, new nodes lowest index first.

A master that reports no plan status (DLRover 0.6.1: the job has no plan reported
``applied``, ``rejected`` or ``failed``) applies what it was served without saying so.
For its jobs the migration looked for is the newest served plan's (``proposed``, or
``superseded`` by a later one; not one computed too late for the master to get it) that
migrated a node of the role, when the pairing is unambiguous: that plan migrated exactly
one node of the role, a node Brain learned from samples (a master that registers its
nodes registers the new one too). The new node then takes the size that plan gave (the
node's own where the plan kept one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow, ScalePlanRow
from brain.domain import PLAN_NOT_SERVED, PlanStatus, RoleSpec, utcnow
from brain.optimizing.proposal import NodeChange

# The status of a node a migration replaced with a newly named one.
NODE_MIGRATED = "migrated"
# The job's newest applied (or served) plans in which a migration is looked for.
RECENT_APPLIED_PLANS = 100
# Plan statuses only a job master reports: a job with none has a master that reports none.
REPORTED_PLAN_STATUSES = (PlanStatus.applied, PlanStatus.rejected, PlanStatus.failed)
# Plans a job master was given and may have applied without reporting it.
SERVED_PLAN_STATUSES = (PlanStatus.proposed, PlanStatus.superseded)


@dataclass(frozen=True)
class Awaiting:
    """A migrated node awaiting its replacement, and the size the replacement takes."""

    node: NodeRow
    size: RoleSpec


def migrated_nodes_replaced(
    session: Session,
    job: JobRow,
    new: Sequence[tuple[str, str, int]],
    holds_place: Callable[[NodeRow], bool],
) -> dict[str, RoleSpec]:
    """For new nodes ``(name, role, index)``, the size each takes as the replacement of a
    migrated node (by the new node's name); those nodes are marked ``migrated``. A new
    node beyond none is a new node of its role. ``holds_place``: whether a node holds a
    place of its role's count (a migrated node awaiting its replacement does)."""
    roles = {role for _, role, _ in new}
    waiting = _awaiting_replacement(session, job, roles, holds_place)
    if not waiting:
        return {}
    nodes = list(session.scalars(select(NodeRow).where(NodeRow.job_id == job.id)))
    declared = job.roles or {}
    replaced: dict[str, RoleSpec] = {}
    for role in sorted(roles):
        count = declared.get(role, RoleSpec()).count
        running = sum(1 for n in nodes if n.role == role and holds_place(n))
        queue = waiting.get(role, [])
        for name, _, _ in sorted((r for r in new if r[1] == role), key=lambda r: r[2]):
            if not queue or count is None or running < count:
                running += 1  # a node the role's count makes room for: not a replacement
                continue
            old = queue.pop(0)
            old.node.status = NODE_MIGRATED
            old.node.finished_at = utcnow()
            replaced[name] = old.size
    return replaced


def _awaiting_replacement(
    session: Session, job: JobRow, roles: set[str], holds_place: Callable[[NodeRow], bool]
) -> dict[str, list[Awaiting]]:
    """Per role, the nodes an applied plan (or, for a master that reports no plan
    status, a served plan) migrated that still hold their place, oldest migration first."""
    migrations = _applied_migrations(session, job, roles)
    if not migrations and not _reports_plan_status(session, job):
        migrations = _served_migrations(session, job, roles)
    if not migrations:
        return {}
    rows = session.scalars(
        select(NodeRow).where(NodeRow.job_id == job.id, NodeRow.name.in_(list(migrations)))
    )
    waiting: dict[str, list[Awaiting]] = {}
    for node in sorted(
        (n for n in rows if holds_place(n) and migrations[n.name].pairs(n)),
        key=lambda n: (migrations[n.name].at, n.id),
    ):
        waiting.setdefault(node.role, []).append(Awaiting(node, migrations[node.name].size(node)))
    return waiting


@dataclass(frozen=True)
class Migration:
    """A node's newest migration: when, and (for a served plan) the change it asked.

    An applied plan wrote the migrated size on the node (``desired_state``); a served
    one did not, so its change says the size, and it pairs only a learned node."""

    at: datetime
    served: NodeChange | None = None

    def pairs(self, node: NodeRow) -> bool:
        return self.served is None or node.learned

    def size(self, node: NodeRow) -> RoleSpec:
        change = self.served or node
        return RoleSpec(
            cpu=_or(change.cpu, node.cpu),
            memory_mib=_or(change.memory_mib, node.memory_mib),
            gpu=_or(change.gpu, node.gpu),
        )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _applied_migrations(session: Session, job: JobRow, roles: set[str]) -> dict[str, Migration]:
    applied = session.execute(
        select(ScalePlanRow.body, ScalePlanRow.applied_at)
        .where(
            ScalePlanRow.job_id == job.id,
            ScalePlanRow.status == PlanStatus.applied.value,
            ScalePlanRow.applied_at.is_not(None),
        )
        .order_by(ScalePlanRow.id.desc())
        .limit(RECENT_APPLIED_PLANS)
    )
    migrations: dict[str, Migration] = {}
    for body, applied_at in applied:
        for change in body.migrate:
            if change.role in roles and change.name:
                migrations.setdefault(change.name, Migration(applied_at))  # the newest
    return migrations


def _reports_plan_status(session: Session, job: JobRow) -> bool:
    reported = select(ScalePlanRow.id).where(
        ScalePlanRow.job_id == job.id,
        ScalePlanRow.status.in_([s.value for s in REPORTED_PLAN_STATUSES]),
    )
    return session.scalar(reported.limit(1)) is not None


def _served_migrations(session: Session, job: JobRow, roles: set[str]) -> dict[str, Migration]:
    """Per role, the migration of the newest served plan that migrated a node of it, when
    it migrated exactly one: of two, which new pod replaced which would be a guess."""
    served = session.execute(
        select(ScalePlanRow.body, ScalePlanRow.created_at)
        .where(
            ScalePlanRow.job_id == job.id,
            ScalePlanRow.status.in_([s.value for s in SERVED_PLAN_STATUSES]),
            # The null check: SQL's != is never true of a plan without a message.
            or_(
                ScalePlanRow.status_message.is_(None),
                ScalePlanRow.status_message != PLAN_NOT_SERVED,
            ),
        )
        .order_by(ScalePlanRow.id.desc())
        .limit(RECENT_APPLIED_PLANS)
    )
    migrations: dict[str, Migration] = {}
    decided: set[str] = set()
    for body, created_at in served:
        for role in roles - decided:
            changes = [c for c in body.migrate if c.role == role and c.name]
            if changes:
                decided.add(role)
                if len(changes) == 1:
                    migrations[changes[0].name] = Migration(created_at, changes[0])
    return migrations
