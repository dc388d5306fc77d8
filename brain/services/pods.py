"""Nodes as Kubernetes names them (a node is named as its pod): which job a pod ran
for, and each node's role, for pages that start from a pod or mark a node's events."""

from __future__ import annotations

from sqlalchemy import select

from brain.db.engine import ReadSession
from brain.db.models import JobRow, NodeRow


def job_uid_of_pod(session: ReadSession, namespace: str, pod: str) -> str | None:
    """The uid of the newest job in ``namespace`` with a node named ``pod``."""
    return session.scalar(
        select(JobRow.uid)
        .join(NodeRow, NodeRow.job_id == JobRow.id)
        .where(NodeRow.name == pod, JobRow.namespace == namespace)
        .order_by(JobRow.created_at.desc())
        .limit(1)
    )


def roles_by_name(session: ReadSession, job: JobRow) -> dict[str, str]:
    """Each of the job's nodes' role, by node name."""
    return dict(
        session.execute(select(NodeRow.name, NodeRow.role).where(NodeRow.job_id == job.id)).all()
    )
