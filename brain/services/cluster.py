"""The cluster's state (free capacity, pending demand): the newest per source, replaced
each time it is recorded, so the table stays one row per source. The collector records
what Prometheus shows, ``POST /api/v1/cluster/state`` what a platform pushes;
``GET /api/v1/cluster/state`` and the running stage read the freshest."""

from __future__ import annotations

from dataclasses import asdict

from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import ClusterStateRow
from brain.domain import ClusterState, as_utc


def record_cluster_state(session: Session, state: ClusterState) -> None:
    """Replace ``state.source``'s row (``merge``: insert or update by primary key)."""
    session.merge(ClusterStateRow(**asdict(state)))
    session.flush()


def latest_cluster_state(session: Session) -> ClusterState | None:
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
