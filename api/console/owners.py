"""A user's or group's page over a window (the last 7, 30 or 90 days, or from one day to
another): the owner's totals, cost and priority, its most wasteful jobs and its weeks.

The totals and cost are the weeks of its trend added up, as the overview's are: one read
of the window's jobs for both, and a window that ends before now is bounded at its end
(the API's owner portrait counts from a start up to now only)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache

from sqlalchemy import Integer, Select, bindparam, select

from api.schemas.portraits import PriorityOut, TotalsOut, WastefulJob
from brain.config import Settings
from brain.db.engine import ReadSession
from brain.db.models import JobSummaryRow
from brain.history.plausible import SECONDS_PER_DAY, believed, window_params, window_share
from brain.portraits.jobs import OWNER_KEYS, SORT_ORDERS
from brain.portraits.priorities import priority_of
from brain.portraits.trend import TrendScope, Week, weekly_trend, window_sum
from brain.summaries.hours import RESOURCES

# The most wasteful jobs an owner page lists.
WASTEFUL_JOBS = 10


@dataclass(frozen=True)
class OwnerWindow:
    owner: str  # "user" or "group"
    key: str
    totals: TotalsOut
    priority: PriorityOut
    wasteful: list[WastefulJob]  # most GPU, then CPU, then memory waste first
    trend: list[Week]


def owner_window(
    session: ReadSession,
    settings: Settings,
    owner: str,
    key: str,
    since: datetime,
    end: datetime,
    namespace: str | None,
) -> OwnerWindow:
    """Of the owner's believed jobs that ended from ``since`` to ``end`` (of ``namespace``
    only, when given), each counting its share inside the window."""
    max_run_s = settings.history_max_run_days * SECONDS_PER_DAY
    prices = settings.prices if settings.prices.configured else None
    scope = TrendScope(namespace, owner, key)
    trend = weekly_trend(session, since, end, scope, prices, max_run_s)
    totals, cost = window_sum(trend)
    params = window_params(since, max_run_s) | {
        "key": key,
        "since": since,
        "end": end,
        "namespace": namespace,
        "limit": WASTEFUL_JOBS,
    }
    rows = session.scalars(_wasteful(owner, namespace is not None), params)
    return OwnerWindow(
        owner,
        key,
        TotalsOut.of(totals, cost),
        PriorityOut.model_validate(priority_of(totals, settings.priority)),
        [WastefulJob.of(row, settings.prices) for row in rows],
        trend,
    )


@cache
def _wasteful(owner: str, by_namespace: bool) -> Select:
    # Ordered as the owner portrait orders its jobs: each one's waste inside the window.
    share = window_share()
    waste = {
        name: (getattr(JobSummaryRow, requested) - getattr(JobSummaryRow, used)) * share
        for name, requested, used in RESOURCES
    }
    conditions = [
        OWNER_KEYS[owner] == bindparam("key"),
        JobSummaryRow.ended_at >= bindparam("since"),
        JobSummaryRow.ended_at < bindparam("end"),
        *believed(),
    ]
    if by_namespace:
        conditions.append(JobSummaryRow.namespace == bindparam("namespace"))
    return (
        select(JobSummaryRow)
        .where(*conditions)
        .order_by(*[waste[name].desc() for name in SORT_ORDERS["gpu"]], JobSummaryRow.job_id)
        .limit(bindparam("limit", type_=Integer))
    )
