"""A job's parameter servers as the store knows them: what a launcher needs to say where
they will be once a plan is applied (the addresses follow its naming, not Brain's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow
from brain.domain import ROLE_PS
from brain.optimizing.proposal import PlanBody
from brain.services.nodes import GONE_NODE_STATUSES


@dataclass(frozen=True)
class PsNode:
    """A PS pod the job had: its name, its id (the name's suffix) and whether it runs."""

    name: str
    index: int
    live: bool


@dataclass(frozen=True)
class PsTier:
    """The job's PS pods, ever, and the PS count it declared (None: none declared)."""

    job_name: str
    namespace: str | None
    nodes: tuple[PsNode, ...]
    declared_count: int | None


# The PS addresses a job has once a plan body is applied, in the launcher's naming (the
# caller speaking for the launcher hands it in; None: the plan keeps the optimizers' own).
PsHosts = Callable[[PsTier, PlanBody], list[str]]


def ps_tier(session: Session, job: JobRow) -> PsTier:
    rows = session.execute(
        select(NodeRow.name, NodeRow.index, NodeRow.status).where(
            NodeRow.job_id == job.id, NodeRow.role == ROLE_PS
        )
    )
    nodes = tuple(PsNode(r.name, r.index, r.status not in GONE_NODE_STATUSES) for r in rows)
    declared = (job.roles or {}).get(ROLE_PS)
    count = declared.count if declared is not None else None
    return PsTier(job.name, job.namespace, nodes, count)
