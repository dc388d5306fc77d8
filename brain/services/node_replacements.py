"""Which new node is the replacement of a migrated one, and so has its migrated size.

A master migrates a node by relaunching it, and may name the new pod anew (DLRover's
master gives a migrated PS the next id: ``<job>-edljob-ps-0`` comes back as
``...-ps-2``). When a master registers the new node, it says its size. When the node is
first seen in samples instead (the Prometheus collector, a sample push), Brain creates
it; sized as its role, it would lose what the migration gave it (a hot PS moved to 12
cores seen as 8, and migrated again), while the migrated node, which no longer runs,
would count as running.

A new node of a role that already runs as many live nodes as the role's count is not a
scale-up (an applied plan that adds nodes raises the count first): it replaces a node
an applied plan migrated. It takes that node's size (the migrated size, which the
applied plan wrote on it), and the migrated node is marked ``migrated``: gone, replaced.
Migrated nodes are paired oldest migration first, new nodes lowest index first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow, ScalePlanRow
from brain.domain import PlanStatus, RoleSpec, utcnow

# The status of a node a migration replaced with a newly named one.
NODE_MIGRATED = "migrated"
# The job's newest applied plans in which a migration is looked for.
RECENT_APPLIED_PLANS = 100


def migrated_nodes_replaced(
    session: Session,
    job: JobRow,
    new: Sequence[tuple[str, str, int]],
    live: Callable[[NodeRow], bool],
) -> dict[str, NodeRow]:
    """For new nodes ``(name, role, index)``, the migrated node each replaces (by the new
    node's name); those nodes are marked ``migrated``. A new node beyond none is a new
    node of its role."""
    roles = {role for _, role, _ in new}
    waiting = _awaiting_replacement(session, job, roles, live)
    if not waiting:
        return {}
    nodes = list(session.scalars(select(NodeRow).where(NodeRow.job_id == job.id)))
    declared = job.roles or {}
    replaced: dict[str, NodeRow] = {}
    for role in sorted(roles):
        count = declared.get(role, RoleSpec()).count
        running = sum(1 for n in nodes if n.role == role and live(n))
        queue = waiting.get(role, [])
        for name, _, _ in sorted((r for r in new if r[1] == role), key=lambda r: r[2]):
            if not queue or count is None or running < count:
                running += 1  # a node the role's count makes room for: not a replacement
                continue
            old = queue.pop(0)
            old.status = NODE_MIGRATED
            old.finished_at = utcnow()
            replaced[name] = old
    return replaced


def _awaiting_replacement(
    session: Session, job: JobRow, roles: set[str], live: Callable[[NodeRow], bool]
) -> dict[str, list[NodeRow]]:
    """Per role, the live nodes an applied plan migrated, oldest migration first."""
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
    migrated_at: dict[str, datetime] = {}
    for body, applied_at in applied:
        for change in body.migrate:
            if change.role in roles and change.name:
                migrated_at.setdefault(change.name, applied_at)  # the newest migration
    if not migrated_at:
        return {}
    rows = session.scalars(
        select(NodeRow).where(NodeRow.job_id == job.id, NodeRow.name.in_(list(migrated_at)))
    )
    waiting: dict[str, list[NodeRow]] = {}
    for node in sorted((n for n in rows if live(n)), key=lambda n: (migrated_at[n.name], n.id)):
        waiting.setdefault(node.role, []).append(node)
    return waiting
