"""A user's or group's resource-hours week by week, for the console's trend table."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.db.models import JobSummaryRow
from brain.domain import as_utc
from brain.portraits.jobs import OWNER_KEYS
from brain.summaries.hours import Hours

WEEK = timedelta(weeks=1)


@dataclass(frozen=True)
class Week:
    start: datetime
    jobs: int
    hours: Hours


def weekly_trend(
    session: Session,
    owner: str,
    key: str,
    since: datetime,
    weeks: int,
    namespace: str | None = None,
) -> list[Week]:
    """``weeks`` weeks from ``since``, oldest first: the jobs of the user or group
    (``owner``), of ``namespace`` only when given, that ended in each week and their
    summed hours (empty weeks as zeros)."""
    columns = [getattr(JobSummaryRow, name) for name in Hours.__dataclass_fields__]
    in_namespace = [] if namespace is None else [JobSummaryRow.namespace == namespace]
    rows = session.execute(
        select(JobSummaryRow.ended_at, *columns).where(
            OWNER_KEYS[owner] == key, JobSummaryRow.ended_at >= since, *in_namespace
        )
    ).all()
    since = as_utc(since)
    totals = [Hours() for _ in range(weeks)]
    counts = [0] * weeks
    for row in rows:
        index = int((as_utc(row.ended_at) - since) / WEEK)
        if 0 <= index < weeks:
            totals[index] = totals[index] + Hours.of(row)
            counts[index] += 1
    return [Week(since + i * WEEK, counts[i], totals[i]) for i in range(weeks)]
