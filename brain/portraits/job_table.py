"""The console's list of jobs: every job (summarized or not) with its summary's
resource-hours, filtered on the job's own fields and sorted by waste or efficiency.

Offset pages with the total count (people jump to a page); a job not summarized yet
(registered, running without a snapshot) has no hours and sorts after the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, case, func, literal, select

from brain.db.engine import ReadSession
from brain.db.models import JobRow, JobSummaryRow
from brain.domain import JobStatus
from brain.summaries.hours import RESOURCES, Hours

# "sort" -> what orders the page (see ``_order``).
SORTS = ("newest", "gpu_waste", "cpu_waste", "memory_waste", "efficiency")


@dataclass(frozen=True)
class JobTableFilters:
    user: str | None = None
    group_key: str | None = None
    namespace: str | None = None
    status: JobStatus | None = None
    name: str | None = None
    dataset: str | None = None
    gpu_type: str | None = None
    # Only jobs in these namespaces (a namespace-restricted token); None: every job.
    namespaces: frozenset[str] | None = None
    # Started in [started_since, started_before) (a run never said to start: when it
    # was registered); None: no bound.
    started_since: datetime | None = None
    started_before: datetime | None = None


@dataclass(frozen=True)
class JobTableRow:
    uid: str
    name: str
    user: str
    namespace: str | None
    dataset: str | None
    gpu_type: str | None
    status: str
    created_at: datetime
    # When the run started (None: not yet, or never said); the list shows this, since
    # created_at is when the job was registered, which a run recorded later makes "today".
    started_at: datetime | None
    # None: not summarized yet.
    hours: Hours | None


def job_table(
    session: ReadSession, filters: JobTableFilters, sort: str, limit: int, offset: int
) -> tuple[list[JobTableRow], int]:
    """A page of jobs and how many match."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}")
    hour_columns = [getattr(JobSummaryRow, name) for name in Hours.__dataclass_fields__]
    query = (
        select(
            JobRow.uid,
            JobRow.name,
            JobRow.user,
            JobRow.namespace,
            JobRow.dataset,
            JobRow.gpu_type,
            JobRow.status,
            JobRow.created_at,
            JobRow.started_at,
            JobSummaryRow.job_id.label("summarized"),
            *hour_columns,
            func.count().over().label("total"),
        )
        .outerjoin(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
        .where(*_conditions(filters))
        .order_by(*_order(sort), JobRow.created_at.desc(), JobRow.id.desc())
        .limit(limit)
        .offset(offset)
    )
    rows = session.execute(query).all()
    if rows:
        total = rows[0].total
    elif offset == 0:
        total = 0
    else:
        count = select(func.count()).select_from(JobRow).where(*_conditions(filters))
        count = count.outerjoin(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
        total = session.scalar(count) or 0
    return [_row(r) for r in rows], total


def _conditions(filters: JobTableFilters) -> list[ColumnElement[bool]]:
    equal = {
        JobRow.user: filters.user,
        JobRow.group_key: filters.group_key,
        JobRow.namespace: filters.namespace,
        JobRow.name: filters.name,
        JobRow.dataset: filters.dataset,
        JobRow.gpu_type: filters.gpu_type,
        JobRow.status: None if filters.status is None else JobStatus(filters.status).value,
    }
    conditions = [column == value for column, value in equal.items() if value is not None]
    if filters.namespaces is not None:
        conditions.append(JobRow.namespace.in_(sorted(filters.namespaces)))
    started = func.coalesce(JobRow.started_at, JobRow.created_at)
    if filters.started_since is not None:
        conditions.append(started >= filters.started_since)
    if filters.started_before is not None:
        conditions.append(started < filters.started_before)
    return conditions


def _order(sort: str) -> list[ColumnElement]:
    if sort == "newest":
        return []
    if sort == "efficiency":
        # Least efficient first: the jobs to look at.
        score = efficiency_score_column()
        return [score.is_(None), score.asc()]
    resource = sort.removesuffix("_waste")
    requested, used = next((req, use) for name, req, use in RESOURCES if name == resource)
    waste = getattr(JobSummaryRow, requested) - getattr(JobSummaryRow, used)
    return [waste.is_(None), waste.desc()]


def efficiency_score_column() -> ColumnElement:
    """``Hours.efficiency_score`` in SQL: the mean over the resources requested of used /
    requested hours, each capped at 1; NULL when nothing was requested."""
    ratios, counted = [], []
    for _, requested, used in RESOURCES:
        req, use = getattr(JobSummaryRow, requested), getattr(JobSummaryRow, used)
        ratio = case((req > 0, use / req), else_=None)
        ratios.append(func.coalesce(case((ratio > 1, literal(1.0)), else_=ratio), 0.0))
        counted.append(case((req > 0, 1), else_=0))
    requested_count = counted[0] + counted[1] + counted[2]
    return case(
        (and_(requested_count > 0), (ratios[0] + ratios[1] + ratios[2]) / requested_count),
        else_=None,
    )


def _row(row) -> JobTableRow:
    return JobTableRow(
        uid=row.uid,
        name=row.name,
        user=row.user,
        namespace=row.namespace,
        dataset=row.dataset,
        gpu_type=row.gpu_type,
        status=str(row.status),
        created_at=row.created_at,
        started_at=row.started_at,
        hours=None if row.summarized is None else Hours.of(row),
    )
