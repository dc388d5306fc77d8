"""What the console's first page counts: jobs by status, and jobs finished today."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from brain.db.engine import ReadSession
from brain.db.models import JobRow
from brain.domain import JobStatus


@dataclass(frozen=True)
class JobCounts:
    running: int
    pending: int
    finished_since: int  # succeeded, failed or stopped since the given time


def job_counts(
    session: ReadSession, finished_since: datetime, namespaces: frozenset[str] | None = None
) -> JobCounts:
    """Jobs running and pending now, and jobs finished since ``finished_since``; only
    those in ``namespaces`` when given (a namespace-restricted token)."""
    scope = [] if namespaces is None else [JobRow.namespace.in_(sorted(namespaces))]
    by_status = dict(
        session.execute(
            select(JobRow.status, func.count())
            .where(JobRow.status.in_([JobStatus.running.value, JobStatus.pending.value]), *scope)
            .group_by(JobRow.status)
        ).all()
    )
    finished = [s.value for s in JobStatus if s.finished]
    done = session.scalar(
        select(func.count())
        .select_from(JobRow)
        .where(JobRow.status.in_(finished), JobRow.finished_at >= finished_since, *scope)
    )
    return JobCounts(
        running=by_status.get(JobStatus.running, 0),
        pending=by_status.get(JobStatus.pending, 0),
        finished_since=done or 0,
    )
