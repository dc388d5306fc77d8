"""Portraits: how a job behaved, and aggregates over users, groups and other keys.

Everything reads summaries. A job without a final summary (running, or finished but
not summarized yet) is computed on the fly from its raw samples, without storing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache

from sqlalchemy import ColumnElement, Integer, Select, bindparam, func, select
from sqlalchemy.orm import Session

from brain.db.engine import ReadSession
from brain.db.models import (
    JobRow,
    JobSummaryRow,
    JobUsageDayRow,
    NodeSummaryRow,
    RoleSummaryRow,
)
from brain.errors import job_not_found
from brain.history.plausible import DEFAULT_MAX_RUN_S, believed, window_params, window_share
from brain.job_ref import JobRef, one_job
from brain.portraits.usage import KEYS as USAGE_KEYS
from brain.portraits.usage import sums, usage_params, window_rows
from brain.summaries import series as series_
from brain.summaries.compute import SummaryRows, compute_summary
from brain.summaries.hours import RESOURCES, Hours

# "sort": the resource whose waste ranks first; ties go to the others, GPUs first.
SORT_ORDERS = {
    "gpu": ("gpu", "cpu", "memory"),
    "cpu": ("cpu", "gpu", "memory"),
    "memory": ("memory", "gpu", "cpu"),
}
# Owner portraits: the owner kind -> the summary column it matches.
OWNER_KEYS = {"user": JobSummaryRow.user, "group": JobSummaryRow.group_key}


@dataclass(frozen=True)
class JobPortrait:
    summary: JobSummaryRow
    roles: list[RoleSummaryRow]
    # None when the job has no samples at all.
    grid: series_.Grid | None
    role_series: dict[str, series_.Columns]
    # None when the job reported no speed.
    speed_series: series_.Columns | None


@dataclass(frozen=True)
class Totals:
    """Aggregates over a set of job summaries."""

    jobs: int
    succeeded: int
    failed: int
    stopped: int
    running: int
    run_seconds: float
    hours: Hours

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed + self.stopped

    def __add__(self, other: Totals) -> Totals:
        # Field by field: a window's weeks add up one of these per week and GPU type.
        return Totals(
            self.jobs + other.jobs,
            self.succeeded + other.succeeded,
            self.failed + other.failed,
            self.stopped + other.stopped,
            self.running + other.running,
            self.run_seconds + other.run_seconds,
            self.hours + other.hours,
        )

    @property
    def success_rate(self) -> float | None:
        return self.succeeded / self.finished if self.finished else None


def job_portrait_of(session: ReadSession, ref: JobRef | str, points: int) -> JobPortrait:
    """The portrait of the job ``ref`` names (404 when there is none, 409 when it names
    jobs of several namespaces): the job, its final summary and its roles come in one
    statement, a round trip less than ``get_job`` first."""
    return job_and_portrait(session, ref, points)[1]


def job_and_portrait(
    session: ReadSession, ref: JobRef | str, points: int
) -> tuple[JobRow, JobPortrait]:
    """As ``job_portrait_of``, with the job row the same statement read (for a caller that
    needs the job too: no second read of it)."""
    ref = JobRef.of(ref)
    params = {"uid": ref.uid, "namespace": ref.namespace, "readable": sorted(ref.readable or ())}
    statement = _job_with_summary(ref.named, ref.namespace is None, ref.readable is not None)
    rows = session.execute(statement, params).all()
    if not rows:
        raise job_not_found(ref.uid)
    found = {row[0].id: row[0] for row in rows}
    job = one_job(ref.uid, list(found.values()))
    mine = [row for row in rows if row[0].id == job.id]
    summary = mine[0][1]
    if summary is None or not summary.final:
        return job, _portrait(compute_summary(session, job), points)
    roles = [role for *_, role in mine if role is not None]
    return job, _portrait(SummaryRows(summary, roles, []), points)


# The statements below are built once (per owner, key or sort) on bound parameters:
# building and keying them took SQLAlchemy longer than PostgreSQL took to run them.


@cache
def _job_with_summary(named: bool, without_namespace: bool, limited: bool) -> Select:
    conditions = [JobRow.uid == bindparam("uid")]
    if named and without_namespace:
        conditions.append(JobRow.namespace.is_(None))
    elif named:
        conditions.append(JobRow.namespace == bindparam("namespace"))
    if limited:
        conditions.append(JobRow.namespace.in_(bindparam("readable", expanding=True)))
    return (
        select(JobRow, JobSummaryRow, RoleSummaryRow)
        .outerjoin(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
        .outerjoin(RoleSummaryRow, RoleSummaryRow.job_id == JobSummaryRow.job_id)
        .where(*conditions)
        .order_by(JobRow.id, RoleSummaryRow.role)
    )


def _portrait(rows: SummaryRows, points: int) -> JobPortrait:
    summary = rows.job
    if not summary.series_buckets:
        return JobPortrait(summary, rows.roles, None, {}, None)
    grid = series_.Grid(summary.series_start, summary.series_bucket_seconds, summary.series_buckets)

    def chart(packed: bytes, merge: dict[str, str]) -> series_.Columns:
        return series_.rebucket(grid, series_.unpack(packed, merge), merge, points)

    return JobPortrait(
        summary=summary,
        roles=rows.roles,
        grid=series_.coarser(grid, points),
        role_series={
            r.role: chart(r.usage_series, series_.USAGE_COLUMNS)
            for r in rows.roles
            if r.usage_series
        },
        speed_series=(
            chart(summary.speed_series, series_.SPEED_COLUMNS) if summary.speed_series else None
        ),
    )


def node_page(
    session: ReadSession, job: JobRow, limit: int, offset: int
) -> tuple[list[NodeSummaryRow], int]:
    """A page of the job's node summaries by role and name, and how many there are."""
    final = session.scalar(select(JobSummaryRow.final).where(JobSummaryRow.job_id == job.id))
    if not final:
        nodes = sorted(compute_summary(session, job).nodes, key=lambda n: (n.role, n.name))
        return nodes[offset : offset + limit], len(nodes)
    total = session.scalar(
        select(func.count()).select_from(NodeSummaryRow).where(NodeSummaryRow.job_id == job.id)
    )
    page = session.scalars(
        select(NodeSummaryRow)
        .where(NodeSummaryRow.job_id == job.id)
        .order_by(NodeSummaryRow.role, NodeSummaryRow.name)
        .limit(limit)
        .offset(offset)
    )
    return list(page), total or 0


def owner_portrait(
    session: ReadSession,
    owner: str,
    value: str,
    since: datetime,
    sort: str,
    limit: int,
    offset: int,
    max_run_s: float = DEFAULT_MAX_RUN_S,
    namespace: str | None = None,
) -> tuple[Totals, list[JobSummaryRow]]:
    """Totals over the believed jobs of a user or group (``owner``) ended since
    ``since`` (each counting its share inside the window, see brain.history.plausible),
    summed from their day rows (``brain.portraits.usage``), and a page of those jobs,
    most waste first."""
    by_namespace = namespace is not None
    usage = usage_params(since, None, max_run_s) | {"value": value, "namespace": namespace}
    totals = session.execute(_owner_totals(owner, by_namespace), usage).one()
    params = {"value": value, "since": since, "limit": limit, "offset": offset}
    params |= window_params(since, max_run_s) | {"namespace": namespace}
    page = session.scalars(_owner_page(owner, sort, by_namespace), params)
    return totals_of(totals), list(page)


@cache
def _owner_page(owner: str, sort: str, by_namespace: bool) -> Select:
    conditions = [
        OWNER_KEYS[owner] == bindparam("value"),
        JobSummaryRow.ended_at >= bindparam("since"),
        *believed(),
    ]
    if by_namespace:
        conditions.append(JobSummaryRow.namespace == bindparam("namespace"))
    return (
        select(JobSummaryRow)
        .where(*conditions)
        .order_by(*_waste_order(sort), JobSummaryRow.job_id)
        .limit(bindparam("limit", type_=Integer))
        .offset(bindparam("offset", type_=Integer))
    )


@cache
def _owner_totals(owner: str, by_namespace: bool) -> Select:
    conditions = [USAGE_KEYS[owner] == bindparam("value")]
    if by_namespace:
        conditions.append(JobUsageDayRow.namespace == bindparam("namespace"))
    return select(*sums(window_rows({}, conditions, bounded=False)))


def owner_totals(
    session: ReadSession, owner: str, since: datetime, max_run_s: float = DEFAULT_MAX_RUN_S
) -> list[tuple[str | None, str, Totals]]:
    """Every user or group (``owner``) of each namespace with believed jobs ended since
    ``since``, with its totals (summed from their day rows): (namespace, key, totals).
    An owner is one per namespace: alice of team-a and alice of team-b are scored apart,
    so one namespace's runs cannot move another's priorities (owners without a key are
    left out)."""
    params = usage_params(since, None, max_run_s)
    rows = session.execute(_owner_totals_by_namespace(owner), params)
    return [(row.namespace, row.key, totals_of(row)) for row in rows]


@cache
def _owner_totals_by_namespace(owner: str) -> Select:
    key = USAGE_KEYS[owner]
    keys = {"namespace": JobUsageDayRow.namespace, "key": key}
    rows = window_rows(keys, [key.is_not(None)], bounded=False)
    return (
        select(rows.c.namespace, rows.c.key, *sums(rows))
        .group_by(rows.c.namespace, rows.c.key)
        .order_by(rows.c.namespace, rows.c.key)
    )


def totals_by(session: Session, kind: str, since: datetime) -> list[tuple[str | None, Totals]]:
    """Every namespace, user or group (``kind``) with jobs ended since ``since``, with
    its totals summed from their day rows (jobs without a namespace under None)."""
    params = usage_params(since, None, DEFAULT_MAX_RUN_S)
    return [(row.key, totals_of(row)) for row in session.execute(_totals_by(kind), params)]


@cache
def _totals_by(kind: str) -> Select:
    rows = window_rows({"key": USAGE_KEYS[kind]}, [], bounded=False)
    return select(rows.c.key, *sums(rows)).group_by(rows.c.key).order_by(rows.c.key)


def ranking(
    session: ReadSession,
    by: str,
    since: datetime,
    sort: str,
    limit: int,
    offset: int,
    max_run_s: float = DEFAULT_MAX_RUN_S,
    namespace: str | None = None,
    end: datetime | None = None,
) -> tuple[list[tuple[str | None, Totals]], int]:
    """Keys of ``by`` (user, dataset, group, gpu_type) with their totals over the
    believed jobs ended since ``since`` (and before ``end`` when given; each its share
    inside the window), most waste first; and how many keys there are. With
    ``namespace``, that namespace's jobs only. Summed from the runs' day rows
    (``brain.portraits.usage``)."""
    params = usage_params(since, end, max_run_s) | {
        "limit": limit,
        "offset": offset,
        "namespace": namespace,
    }
    by_namespace, bounded = namespace is not None, end is not None
    rows = session.execute(_ranking_page(by, sort, by_namespace, bounded), params).all()
    if rows:
        count = rows[0].key_count
    elif offset == 0:
        count = 0
    else:
        count = session.scalar(_ranking_count(by, by_namespace, bounded), params)
    return [(row.key, totals_of(row)) for row in rows], count or 0


@cache
def _ranking_page(by: str, sort: str, by_namespace: bool, bounded: bool) -> Select:
    rows = _ranking_rows(by, by_namespace, bounded)

    def waste(resource: str) -> ColumnElement:
        requested, used = _resource_columns(resource)
        return func.sum(rows.c[requested] - rows.c[used])

    # The window counts the groups before LIMIT: the page and the number of keys in one
    # statement. Only a page past the end has no row to carry it.
    return (
        select(rows.c.key, *sums(rows), func.count().over().label("key_count"))
        .group_by(rows.c.key)
        .order_by(*[waste(resource).desc() for resource in SORT_ORDERS[sort]], rows.c.key)
        .limit(bindparam("limit", type_=Integer))
        .offset(bindparam("offset", type_=Integer))
    )


@cache
def _ranking_count(by: str, by_namespace: bool, bounded: bool) -> Select:
    rows = _ranking_rows(by, by_namespace, bounded)
    keys = select(rows.c.key).group_by(rows.c.key)
    return select(func.count()).select_from(keys.subquery())


def _ranking_rows(by: str, by_namespace: bool, bounded: bool):
    conditions = [JobUsageDayRow.namespace == bindparam("namespace")] if by_namespace else []
    return window_rows({"key": USAGE_KEYS[by]}, conditions, bounded)


NO_TOTALS = Totals(0, 0, 0, 0, 0, 0.0, Hours())


def totals_of(row) -> Totals:
    """The totals of a row of ``aggregates``."""
    return Totals(
        jobs=row.jobs,
        succeeded=row.succeeded,
        failed=row.failed,
        stopped=row.stopped,
        running=row.running,
        run_seconds=float(row.run_seconds),
        hours=Hours.of(row),
    )


def _waste_order(sort: str) -> list[ColumnElement]:
    return [_job_waste(resource).desc() for resource in SORT_ORDERS[sort]]


def _job_waste(resource: str) -> ColumnElement:
    requested, used = _resource_columns(resource)
    return (getattr(JobSummaryRow, requested) - getattr(JobSummaryRow, used)) * window_share()


def _resource_columns(resource: str) -> tuple[str, str]:
    return next((req, used) for name, req, used in RESOURCES if name == resource)
