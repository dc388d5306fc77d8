"""Age out raw samples once a job's summary is kept (portraits read summaries)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeSampleRow, SpeedSampleRow


def delete_old_samples(session: Session, older_than_days: int, now: datetime) -> int:
    """Delete raw samples older than the cutoff of summarized jobs; returns rows deleted."""
    cutoff = now - timedelta(days=older_than_days)
    summarized = select(JobRow.id).where(JobRow.summarized_at.is_not(None))
    deleted = 0
    for model in (NodeSampleRow, SpeedSampleRow):
        result = session.execute(
            delete(model).where(model.ts < cutoff, model.job_id.in_(summarized))
        )
        deleted += result.rowcount
    return deleted
