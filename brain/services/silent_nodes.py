"""Nodes Brain learned from samples whose samples stopped: gone, as ``stopped``.

A master that reports no node status (DLRover 0.6.1 reports none) leaves Brain only its
pods' samples to know them by: a pod that ended (a PS the master migrated to a new pod
under a new name, one it removed) would otherwise stay ``running`` and hold a place of
its role's count in every plan's view of the job. When a job's samples are stored, each
learned node whose newest sample is ``silent_after_s`` older than the job's newest
becomes ``stopped`` (from that last sample), and a ``stopped`` learned node heard again
(a gap in one pod's series longer than the setting) runs again.

Only learned nodes: a node a master registered keeps the status its master gives it,
silent or not. Silence is measured on the job's clock, its newest node sample, as the
optimizers' clock is: a collector that stops reading the whole job (Prometheus down)
silences none of its nodes, and a backfill of older points stops none. A learned node
with no sample at all (named only by an OOM event) is not judged: nothing of it stopped.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow, NodeSampleRow
from brain.domain import as_utc

NODE_RUNNING = "running"
# What a silent learned node becomes: what a master reports for a pod that ended.
NODE_SILENT = "stopped"


def settle_silent_nodes(session: Session, job: JobRow, silent_after_s: float) -> None:
    """Stop the job's learned nodes that went silent; run again those heard again."""
    newest = session.scalar(
        select(func.max(NodeSampleRow.ts)).where(NodeSampleRow.job_id == job.id)
    )
    if newest is None:
        return
    cutoff = as_utc(newest) - timedelta(seconds=silent_after_s)
    changed = {
        node_id: last
        for node_id, status, last in _learned_nodes_last_heard(session, job)
        if (status == NODE_RUNNING) == (last < cutoff)
    }
    if not changed:
        return
    # Loaded and set (not a bulk UPDATE), so rows this session holds see the change.
    for node in session.scalars(select(NodeRow).where(NodeRow.id.in_(list(changed)))):
        silent = node.status == NODE_RUNNING
        node.status = NODE_SILENT if silent else NODE_RUNNING
        node.finished_at = changed[node.id] if silent else None
    session.flush()


def _learned_nodes_last_heard(session: Session, job: JobRow) -> list[tuple[int, str, datetime]]:
    """``(id, status, newest sample time)`` of each running or stopped learned node that
    has samples (the newest found on the samples' primary key, a seek per node)."""
    last = (
        select(func.max(NodeSampleRow.ts))
        .where(NodeSampleRow.node_id == NodeRow.id)
        .correlate(NodeRow)
        .scalar_subquery()
    )
    rows = session.execute(
        select(NodeRow.id, NodeRow.status, last).where(
            NodeRow.job_id == job.id,
            NodeRow.learned,
            NodeRow.status.in_((NODE_RUNNING, NODE_SILENT)),
        )
    )
    return [(node_id, status, as_utc(ts)) for node_id, status, ts in rows if ts is not None]
