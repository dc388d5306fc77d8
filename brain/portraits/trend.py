"""Waste, efficiency, OOM kills and cost week by week, for the console's trends and the
window totals beside them.

Weeks are ISO weeks in UTC (Monday 00:00 to the next Monday). The jobs counted are those
the portraits' window totals count: believed runs that ended in the window, each its
share inside the window (see ``brain.history.plausible``), so the weeks of a window add
up to its totals (``window_sum``). They are summed in SQL per week and GPU type (GPUs
cost what their type costs), so a page reads a few rows whatever the number of jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from sqlalchemy import ColumnElement, Double, Integer, Select, bindparam, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from brain.costs import Cost, Prices
from brain.db.engine import ReadSession
from brain.db.models import JobSummaryRow
from brain.domain import as_utc
from brain.history.plausible import (
    DEFAULT_MAX_RUN_S,
    believed,
    epoch_seconds,
    window_params,
)
from brain.portraits.jobs import NO_TOTALS, OWNER_KEYS, Totals, aggregates, totals_of
from brain.summaries.hours import Hours

WEEK = timedelta(weeks=1)
WEEK_S = WEEK.total_seconds()


@dataclass(frozen=True)
class TrendScope:
    """Whose jobs: every namespace's (the defaults), a namespace's, a user's or a group's
    (``owner`` "user" or "group" and its ``key``), or an owner's within a namespace."""

    namespace: str | None = None
    owner: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class Week:
    start: datetime  # Monday 00:00 UTC
    totals: Totals
    cost: Cost | None  # None when no price is set

    @property
    def jobs(self) -> int:
        return self.totals.jobs

    @property
    def hours(self) -> Hours:
        return self.totals.hours

    @property
    def iso_week(self) -> str:
        year, week, _ = self.start.isocalendar()
        return f"{year}-W{week:02d}"


def week_start(moment: datetime) -> datetime:
    """Monday 00:00 UTC of the ISO week holding ``moment``."""
    day = as_utc(moment).astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def week_count(since: datetime, end: datetime) -> int:
    """ISO weeks a window from ``since`` to ``end`` (exclusive) touches."""
    last = week_start(as_utc(end) - timedelta(microseconds=1))
    return int((last - week_start(since)) / WEEK) + 1


def weekly_trend(
    session: ReadSession,
    since: datetime,
    end: datetime,
    scope: TrendScope,
    prices: Prices | None,
    max_run_s: float = DEFAULT_MAX_RUN_S,
) -> list[Week]:
    """The ISO weeks from the one holding ``since`` to the one holding ``end``, oldest
    first: the jobs of ``scope`` that ended from ``since`` to ``end`` (exclusive), with
    their hours, OOM kills and, with ``prices``, cost (a week without jobs as zeros)."""
    origin = week_start(since)
    params = window_params(since, max_run_s) | {
        "since": since,
        "end": end,
        "week_origin_s": origin.timestamp(),
        "namespace": scope.namespace,
        "key": scope.key,
    }
    rows = session.execute(_weekly(scope.owner, scope.namespace is not None), params)
    count = week_count(since, end)
    totals = [NO_TOTALS] * count
    costs = [Cost(0.0, 0.0)] * count
    for row in rows:
        found = totals_of(row)
        totals[row.week] = totals[row.week] + found
        if prices is not None:
            costs[row.week] = costs[row.week] + prices.of(found.hours, row.gpu_type)
    return [
        Week(origin + i * WEEK, totals[i], costs[i] if prices is not None else None)
        for i in range(count)
    ]


def window_sum(weeks: list[Week]) -> tuple[Totals, Cost | None]:
    """The weeks' totals and cost added up: the window's (None: no price set)."""
    totals = sum((w.totals for w in weeks), NO_TOTALS)
    costs = [w.cost for w in weeks if w.cost is not None]
    return totals, sum(costs, Cost(0.0, 0.0)) if costs else None


@cache
def _weekly(owner: str | None, by_namespace: bool) -> Select:
    week = whole_weeks(epoch_seconds(JobSummaryRow.ended_at) - _param("week_origin_s"))
    conditions: list[ColumnElement[bool]] = [
        JobSummaryRow.ended_at >= bindparam("since"),
        JobSummaryRow.ended_at < bindparam("end"),
        *believed(),
    ]
    if owner is not None:
        conditions.append(OWNER_KEYS[owner] == bindparam("key"))
    if by_namespace:
        conditions.append(JobSummaryRow.namespace == bindparam("namespace"))
    return (
        select(week.label("week"), JobSummaryRow.gpu_type, *aggregates())
        .where(*conditions)
        .group_by(week, JobSummaryRow.gpu_type)
    )


def _param(name: str):
    return bindparam(name, type_=Double)


class whole_weeks(FunctionElement):  # noqa: N801 (an SQL function's name)
    """Whole weeks in a number of seconds not below zero (a time in the window less the
    Monday the window's first week starts on), rounded down, in PostgreSQL and SQLite:
    the week a job ended in, for GROUP BY."""

    type = Integer()
    inherit_cache = True


@compiles(whole_weeks, "postgresql")
def _whole_weeks_postgresql(element, compiler, **kw) -> str:
    # PostgreSQL's CAST rounds to the nearest: FLOOR first.
    return f"CAST(FLOOR(({compiler.process(element.clauses, **kw)}) / {WEEK_S}) AS INTEGER)"


@compiles(whole_weeks, "sqlite")
def _whole_weeks_sqlite(element, compiler, **kw) -> str:
    # SQLite's CAST truncates: rounding down for the numbers this is given.
    return f"CAST(({compiler.process(element.clauses, **kw)}) / {WEEK_S} AS INTEGER)"
