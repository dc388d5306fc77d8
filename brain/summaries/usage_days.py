"""A summarized run's hours per UTC day (``job_usage_days``), written with its summary.

A window counts each run that ended in it with the share of its hours after the window's
start, the hours spread evenly over the run (``brain.history.plausible``). Split by UTC
day once, when the summary is written, that share is the sum of the run's days from the
window's first (the first in part when the window starts within a day), so a window and
its ISO weeks are range sums of stored rows (``brain.portraits.usage``) instead of a
share computed for every run of the window at every request.

A run has one row per UTC day it touched, the day it ended included (which holds the job
itself and its events). A run longer than any setting believes
(``bounds.LONGEST_MAX_RUN_DAYS``) has no row: no window counts it, and a run with a sample
from years ago adds no row per day since.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, insert
from sqlalchemy.orm import Session

from brain.bounds import LONGEST_MAX_RUN_DAYS
from brain.db.models import JobSummaryRow, JobUsageDayRow
from brain.domain import JobStatus, as_utc
from brain.summaries.hours import RESOURCES

DAY = timedelta(days=1)
LONGEST_S = LONGEST_MAX_RUN_DAYS * DAY.total_seconds()
HOURS = [name for _, requested, used in RESOURCES for name in (requested, used)]
STATUSES = [s for s in JobStatus if s != JobStatus.pending]


def day_rows(summary: JobSummaryRow) -> list[dict[str, Any]]:
    """The ``job_usage_days`` rows of a summary, oldest day first."""
    end = as_utc(summary.ended_at)
    run_s = summary.run_seconds
    span = (summary.series_bucket_seconds or 0.0) * (summary.series_buckets or 0)
    believable = max(run_s, span)
    if believable > LONGEST_S:
        return []
    start = end - timedelta(seconds=run_s)
    keys = {
        "job_id": summary.job_id,
        "namespace": summary.namespace,
        "user": summary.user,
        "group_key": summary.group_key,
        "dataset": summary.dataset,
        "gpu_type": summary.gpu_type,
        "ended_at": end,
        "end_week": _midnight(end) - timedelta(days=end.weekday()),
        "believable_seconds": believable,
    }
    rows = []
    last = _midnight(end)
    day = _midnight(start)
    while day <= last:
        part_from, part_to = max(start, day), min(end, day + DAY)
        seconds = (part_to - part_from).total_seconds()
        # A run within one day keeps its hours exactly (no division by its run time).
        whole = part_from == start and part_to == end
        hours = {
            name: getattr(summary, name) if whole else getattr(summary, name) * (seconds / run_s)
            for name in HOURS
        }
        ends = 1 if day == last else 0
        status = JobStatus(summary.status)
        rows.append(
            keys
            | hours
            | {
                "day": day,
                "from_at": part_from,
                "to_at": part_to,
                "run_seconds": seconds,
                "jobs": ends,
                **{s.value: ends if status == s else 0 for s in STATUSES},
                "oom_count": summary.oom_count if ends else 0,
                "failure_count": summary.failure_count if ends else 0,
            }
        )
        day += DAY
    return rows


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def clear_usage_days(session: Session, job_ids: list[int]) -> None:
    """Delete the jobs' day rows (before their summaries are replaced or deleted)."""
    if job_ids:
        session.execute(delete(JobUsageDayRow).where(JobUsageDayRow.job_id.in_(job_ids)))


def write_usage_days(session: Session, summaries: list[JobSummaryRow]) -> None:
    """Insert the day rows of stored summaries whose earlier rows are cleared."""
    rows = [row for summary in summaries for row in day_rows(summary)]
    if rows:
        session.execute(insert(JobUsageDayRow), rows)
