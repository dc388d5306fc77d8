"""Window sums over ``job_usage_days``: the believed runs that ended in a window, each
with its hours inside the window (``brain.history.plausible``), summed from the runs'
day rows (``brain.summaries.usage_days``).

A run's rows that start at or after the window's start count whole; only on the
window's first day, when the window starts within it, does a row count in part (its hours
after the start, spread evenly, as the run's share counts them). So a window reads its
runs' day rows as stored, with a share computed only for the first day's.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import ColumnElement, Double, Subquery, bindparam, func, select, union_all

from brain.db.models import JobUsageDayRow
from brain.domain import as_utc
from brain.history.plausible import epoch_seconds
from brain.summaries.usage_days import HOURS, STATUSES

T = JobUsageDayRow
# Spread over the run: a first day's row counts its share of them.
SPREAD = ["run_seconds", *HOURS]
# Counted once, on the day the run ended.
COUNTED = ["jobs", *(s.value for s in STATUSES), "oom_count", "failure_count"]
# Rankings' and spend's keys -> the row's column.
KEYS = {
    "user": T.user,
    "dataset": T.dataset,
    "group": T.group_key,
    "gpu_type": T.gpu_type,
    "namespace": T.namespace,
}


def usage_params(
    since: datetime, end: datetime | None, max_run_s: float
) -> dict[str, datetime | float | None]:
    """The bound parameters of ``window_rows``: the window from ``since`` to ``end``
    (None: no end) and the longest run believed."""
    since = as_utc(since).astimezone(UTC)
    return {
        "since": since,
        "end": end,
        "since_epoch": since.timestamp(),
        "first_day": since.replace(hour=0, minute=0, second=0, microsecond=0),
        "max_run_s": max_run_s,
    }


def window_rows(
    keys: dict[str, ColumnElement], conditions: list[ColumnElement[bool]], bounded: bool
) -> Subquery:
    """Each day row of the window's runs with its part inside the window: ``keys``
    (label -> column) and the ``SPREAD`` and ``COUNTED`` columns, of the rows that also
    meet ``conditions``; with ``bounded``, runs that ended before ``:end`` only."""
    common = [
        T.ended_at >= bindparam("since"),
        T.believable_seconds <= bindparam("max_run_s", type_=Double),
        *conditions,
    ]
    if bounded:
        common.append(T.ended_at < bindparam("end"))
    labelled = [column.label(label) for label, column in keys.items()]
    counted = [getattr(T, name) for name in COUNTED]
    whole = select(*labelled, *(getattr(T, name) for name in SPREAD), *counted).where(
        T.from_at >= bindparam("since"), *common
    )
    # The first day's rows of runs that started before the window: the part from the
    # window's start to the row's end (a row in part is never empty: it ends after).
    inside = (epoch_seconds(T.to_at) - bindparam("since_epoch", type_=Double)) / T.run_seconds
    part = select(
        *labelled, *((getattr(T, name) * inside).label(name) for name in SPREAD), *counted
    ).where(T.day == bindparam("first_day"), T.from_at < bindparam("since"), *common)
    return union_all(whole, part).subquery("in_window")


def sums(rows: Subquery) -> list[ColumnElement]:
    """The columns ``brain.portraits.jobs.totals_of`` reads, summed over ``rows``."""
    return [func.coalesce(func.sum(rows.c[name]), 0).label(name) for name in COUNTED] + [
        func.coalesce(func.sum(rows.c[name]), 0.0).label(name) for name in SPREAD
    ]
