"""Delete a job with everything stored about it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from brain.db.models import (
    EventRow,
    JobRow,
    JobSummaryRow,
    JobUsageDayRow,
    MasterReportRow,
    NodeRow,
    NodeSampleRow,
    NodeSummaryRow,
    RoleSummaryRow,
    ScalePlanRow,
    SpeedSampleRow,
)
from brain.job_ref import JobRef
from brain.services.jobs import get_job

# Children first, so the job goes last and nothing depends on the database's cascades
# (SQLite enforces foreign keys only when asked per connection). Plans go before the
# events they may answer, node summaries before the nodes they name.
_CHILDREN = (
    ("node_samples", NodeSampleRow),
    ("speed_samples", SpeedSampleRow),
    ("plans", ScalePlanRow),
    ("events", EventRow),
    ("node_summaries", NodeSummaryRow),
    ("role_summaries", RoleSummaryRow),
    ("job_usage_days", JobUsageDayRow),
    ("job_summaries", JobSummaryRow),
    ("master_reports", MasterReportRow),
    ("nodes", NodeRow),
)


@dataclass(frozen=True)
class DeletedJob:
    uid: str
    namespace: str | None
    # Rows deleted per table, the job's own row not counted.
    rows: dict[str, int]


def delete_job(session: Session, ref: JobRef | str) -> DeletedJob:
    """Delete the job ``ref`` names (404 and 409 as ``get_job``) with its nodes, samples,
    plans, events, summaries and master reports; in the caller's transaction, so either
    all of it goes or nothing does."""
    job = get_job(session, ref)
    job_id, uid, namespace = job.id, job.uid, job.namespace
    rows = {}
    for name, model in _CHILDREN:
        result = session.execute(delete(model).where(model.job_id == job_id))
        rows[name] = result.rowcount
    session.execute(delete(JobRow).where(JobRow.id == job_id))
    session.expunge(job)
    return DeletedJob(uid=uid, namespace=namespace, rows=rows)
