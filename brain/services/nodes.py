"""Nodes of a job: explicit registration, and creation on first sight in samples."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from brain.bounds import MAX_ROLES
from brain.db.chunks import chunked, in_list_chunks, rows_per_statement
from brain.db.engine import ReadSession
from brain.db.models import JobRow, NodeRow
from brain.domain import RoleSpec, utcnow
from brain.errors import InvalidInput
from brain.services.node_replacements import NODE_MIGRATED, migrated_nodes_replaced
from brain.services.silent_nodes import NODE_SILENT

# Nodes in these states no longer run: they neither count nor hold a stage back
# (``migrated``: replaced by a newly named node, see ``node_replacements``).
GONE_NODE_STATUSES = frozenset(
    {"failed", "removed", "succeeded", "stopped", "evicted", NODE_MIGRATED}
)
# Of those, the nodes that stopped without the job or a plan meaning it: while their
# role still counts them, the master may bring them back as they were.
FAILED_NODE_STATUSES = frozenset({"failed", "evicted"})


@dataclass(frozen=True)
class NodeRef:
    """A node as a sample names it."""

    name: str
    role: str
    index: int


@dataclass
class NodeInput:
    role: str
    index: int
    cpu: float = 0.0
    memory_mib: float = 0.0
    gpu: float = 0.0
    status: str = "running"
    created_at: datetime | None = None
    finished_at: datetime | None = None


def check_roles(session: Session, job: JobRow, roles: set[str]) -> None:
    """Refuse nodes that would give the job more than ``MAX_ROLES`` roles (its declared
    ones and its nodes' together): every plan and optimizer pass is per role."""
    new = roles - set(job.roles or {})
    if not new:
        return
    known = set(job.roles or {}) | set(
        session.scalars(select(NodeRow.role).where(NodeRow.job_id == job.id).distinct())
    )
    if len(known | new) > MAX_ROLES:
        raise InvalidInput(
            f"job {job.uid!r} would have {len(known | new)} roles; at most {MAX_ROLES}",
            field="role",
        )


def list_nodes(session: ReadSession, job: JobRow) -> list[NodeRow]:
    return list(
        session.scalars(select(NodeRow).where(NodeRow.job_id == job.id).order_by(NodeRow.id))
    )


def ranks_by_name(session: ReadSession, job: JobRow) -> dict[str, int]:
    """Each of the job's nodes' index within its role (its rank), by node name."""
    return dict(
        session.execute(select(NodeRow.name, NodeRow.index).where(NodeRow.job_id == job.id)).all()
    )


def find_node(session: Session, job: JobRow, name: str) -> NodeRow | None:
    return session.scalar(select(NodeRow).where(NodeRow.job_id == job.id, NodeRow.name == name))


def upsert_node(session: Session, job: JobRow, name: str, data: NodeInput) -> tuple[NodeRow, bool]:
    """Register or update a node; returns it and whether it was created."""
    node = find_node(session, job, name)
    if node is None or node.role != data.role:
        check_roles(session, job, {data.role})
    if node is None:
        try:
            with session.begin_nested():
                node = NodeRow(job_id=job.id, name=name, created_at=data.created_at or utcnow())
                _describe(node, data)
                session.add(node)
            return node, True
        except IntegrityError:
            # A concurrent request, or a sample batch naming the node, created it first:
            # only this savepoint is undone, and this request updates that node.
            node = find_node(session, job, name)
            if node is None:
                raise
    _describe(node, data)
    session.flush()
    return node, False


def _describe(node: NodeRow, data: NodeInput) -> None:
    node.role = data.role
    node.index = data.index
    node.cpu = data.cpu
    node.memory_mib = data.memory_mib
    node.gpu = data.gpu
    node.status = data.status
    node.finished_at = data.finished_at
    # Registered: the node's status is its master's word from now on, kept when its
    # samples stop (only a learned node goes silent, ``silent_nodes``).
    node.learned = False


def ensure_nodes(session: Session, job: JobRow, refs: Iterable[NodeRef]) -> dict[str, int]:
    """Node ids by name, creating unknown nodes with the request of their role (if known),
    or, for the replacement of a migrated node, with the size it was migrated to.

    Insert-or-ignore keeps two concurrent batches naming the same new node from failing.
    A push may name 10,000 new nodes: they are inserted in as many statements as the
    databases' parameter limits need (``brain.db.chunks``), in the caller's transaction.
    """
    wanted: dict[str, NodeRef] = {}
    for ref in refs:
        wanted.setdefault(ref.name, ref)
    ids = _node_ids(session, job, wanted)
    missing = [ref for name, ref in wanted.items() if name not in ids]
    if missing:
        check_roles(session, job, {ref.role for ref in missing})
        now = utcnow()
        replaced = migrated_nodes_replaced(
            session, job, [(r.name, r.role, r.index) for r in missing], _holds_place
        )
        rows = [_new_node_row(job, ref, now, replaced.get(ref.name)) for ref in missing]
        insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
        for chunk in chunked(rows, rows_per_statement(len(rows[0]))):
            session.execute(insert(NodeRow).values(chunk).on_conflict_do_nothing())
        ids = _node_ids(session, job, wanted)
    return ids


def _node_ids(session: Session, job: JobRow, wanted: dict[str, NodeRef]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for names in in_list_chunks(wanted):
        named = NodeRow.job_id == job.id, NodeRow.name.in_(names)
        ids.update(session.execute(select(NodeRow.name, NodeRow.id).where(*named)).all())
    return ids


def _holds_place(node: NodeRow) -> bool:
    """Whether the node holds a place of its role's count when a new node is paired with
    the migrated one it replaces: a live node, or a learned one stopped because its
    samples stopped. A migrated PS goes silent when its new pod starts, and that pod may
    be seen later than the silence setting (a slow image pull): the migrated node still
    awaits its replacement, which is no new node the count made room for."""
    silenced = node.learned and node.status == NODE_SILENT
    return silenced or node.status not in GONE_NODE_STATUSES


def _new_node_row(job: JobRow, ref: NodeRef, now: datetime, migrated: RoleSpec | None) -> dict:
    """A new node's row: the size it was migrated to (it replaces a migrated node), else
    its role's."""
    size = migrated or (job.roles or {}).get(ref.role, RoleSpec())
    return {
        "job_id": job.id,
        "name": ref.name,
        "role": ref.role,
        "index": ref.index,
        "cpu": size.cpu or 0.0,
        "memory_mib": size.memory_mib or 0.0,
        "gpu": size.gpu or 0.0,
        "status": "running",
        "created_at": now,
        "learned": True,
    }
