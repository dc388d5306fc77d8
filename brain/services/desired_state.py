"""An applied plan becomes the job's desired state, which the next optimization starts from.

Role specs take the plan's values (count and sizes), every node of a resized role and
every migrated node takes its new request, and removed nodes stop counting. A plan's role
is complete (fields it did not change hold the job's values), so only a size that differs
from the role's spec resizes its nodes: a PS migrated earlier keeps its own request when a
later plan only adds PS.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow
from brain.domain import RoleSpec, utcnow
from brain.optimizing.proposal import PlanBody

NODE_REMOVED = "removed"
_SIZES = ("cpu", "memory_mib", "gpu")


def apply_plan(session: Session, job: JobRow, body: PlanBody) -> None:
    nodes = list(session.scalars(select(NodeRow).where(NodeRow.job_id == job.id)))
    roles = dict(job.roles or {})
    for role, spec in body.roles.items():
        before = roles.get(role, RoleSpec())
        roles[role] = before.overlay(spec)
        resized = {
            size: getattr(spec, size)
            for size in _SIZES
            if getattr(spec, size) is not None and getattr(spec, size) != getattr(before, size)
        }
        for node in (n for n in nodes if n.role == role):
            for size, value in resized.items():
                setattr(node, size, value)
    by_name = {n.name: n for n in nodes}
    for change in body.migrate:
        node = by_name.get(change.name or "")
        if node is None:
            continue
        for size in _SIZES:
            value = getattr(change, size)
            if value is not None:
                setattr(node, size, value)
    for change in body.remove:
        node = by_name.get(change.name or "")
        if node is not None:
            node.status = NODE_REMOVED
    # A new dict, so the JSON column sees the change.
    job.roles = roles
    job.updated_at = utcnow()
    session.flush()
