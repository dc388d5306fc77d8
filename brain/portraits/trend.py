"""Waste, efficiency, OOM kills and cost week by week, for the console's trends and the
window totals beside them.

Weeks are ISO weeks in UTC (Monday 00:00 to the next Monday). The jobs counted are those
the portraits' window totals count: believed runs that ended in the window, each its
share inside the window (see ``brain.history.plausible``), so the weeks of a window add
up to its totals (``window_sum``). They are summed in SQL per week and GPU type (GPUs
cost what their type costs) from the runs' day rows (``brain.portraits.usage``), so a
page reads a few rows whatever the number of jobs, and no run's share is computed but on
the window's first day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from sqlalchemy import ColumnElement, Select, bindparam, select

from brain.costs import Cost, Prices
from brain.db.engine import ReadSession
from brain.db.models import JobUsageDayRow
from brain.domain import as_utc
from brain.history.plausible import DEFAULT_MAX_RUN_S
from brain.portraits.jobs import NO_TOTALS, Totals, totals_of
from brain.portraits.usage import sums, usage_params, window_rows
from brain.summaries.hours import Hours

WEEK = timedelta(weeks=1)


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
    params = usage_params(since, end, max_run_s) | {
        "namespace": scope.namespace,
        "key": scope.key,
    }
    rows = session.execute(_weekly(scope.owner, scope.namespace is not None), params)
    count = week_count(since, end)
    totals = [NO_TOTALS] * count
    costs = [Cost(0.0, 0.0)] * count
    for row in rows:
        week = round((row.end_week - origin) / WEEK)
        found = totals_of(row)
        totals[week] = totals[week] + found
        if prices is not None:
            costs[week] = costs[week] + prices.of(found.hours, row.gpu_type)
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
    conditions: list[ColumnElement[bool]] = []
    if owner is not None:
        conditions.append(OWNER_COLUMNS[owner] == bindparam("key"))
    if by_namespace:
        conditions.append(JobUsageDayRow.namespace == bindparam("namespace"))
    keys = {"end_week": JobUsageDayRow.end_week, "gpu_type": JobUsageDayRow.gpu_type}
    rows = window_rows(keys, conditions, bounded=True)
    return select(rows.c.end_week, rows.c.gpu_type, *sums(rows)).group_by(
        rows.c.end_week, rows.c.gpu_type
    )


# Owner pages: the owner kind -> the day rows' column it matches.
OWNER_COLUMNS = {"user": JobUsageDayRow.user, "group": JobUsageDayRow.group_key}
