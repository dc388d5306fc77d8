"""Which summarized runs history, portraits and priorities believe, and how much of a
run a window counts.

A run longer than ``BRAIN_HISTORY_MAX_RUN_DAYS``, or whose samples span longer than
that, is not believed: one job registered with a sample from 2000 and one from today
would otherwise count 26 run-years, sizing plans and moving an owner's priority with a
single record. Such a run stays stored and readable (its own portrait says why it is
left out: ``excluded_reason``), but no aggregate counts it.

A believed run that started before a window counts the share of its hours that fell
inside the window, so a long run does not count in full in a short window.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, Double, bindparam, case, func
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from brain.bounds import DEFAULT_MAX_RUN_DAYS
from brain.db.models import JobSummaryRow

SECONDS_PER_DAY = 86400.0
DEFAULT_MAX_RUN_S = DEFAULT_MAX_RUN_DAYS * SECONDS_PER_DAY


def believed() -> list[ColumnElement[bool]]:
    """Conditions on job_summaries: the run and its samples' span within
    ``:max_run_s`` (a bound parameter)."""
    limit = bindparam("max_run_s", type_=Double)
    span = JobSummaryRow.series_bucket_seconds * JobSummaryRow.series_buckets
    return [JobSummaryRow.run_seconds <= limit, func.coalesce(span, 0.0) <= limit]


def excluded_reason(summary: JobSummaryRow, max_run_s: float) -> str | None:
    """Why aggregates leave this run out, or None when they count it."""
    days = max_run_s / SECONDS_PER_DAY
    if summary.run_seconds > max_run_s:
        return (
            f"a run of {summary.run_seconds / SECONDS_PER_DAY:.1f} days, longer than "
            f"BRAIN_HISTORY_MAX_RUN_DAYS ({days:g}): left out of history, portraits and "
            "priorities"
        )
    span = (summary.series_bucket_seconds or 0.0) * (summary.series_buckets or 0)
    if span > max_run_s:
        return (
            f"samples spanning {span / SECONDS_PER_DAY:.1f} days, longer than "
            f"BRAIN_HISTORY_MAX_RUN_DAYS ({days:g}): left out of history, portraits and "
            "priorities"
        )
    return None


class epoch_seconds(FunctionElement):  # noqa: N801 (an SQL function's name)
    """Seconds since 1970 of a timestamp column, in PostgreSQL and SQLite."""

    type = Double()
    inherit_cache = True


@compiles(epoch_seconds, "postgresql")
def _epoch_postgresql(element, compiler, **kw) -> str:
    return f"date_part('epoch', {compiler.process(element.clauses, **kw)})"


@compiles(epoch_seconds, "sqlite")
def _epoch_sqlite(element, compiler, **kw) -> str:
    return f"((julianday({compiler.process(element.clauses, **kw)}) - 2440587.5) * 86400.0)"


def window_share() -> ColumnElement[float]:
    """The share of each run inside the window starting at ``:since_epoch`` (a bound
    parameter, seconds since 1970): a run ending at ``ended_at`` after ``run_seconds``
    has ``ended_at - since`` of them inside when that is less than all of them."""
    inside = epoch_seconds(JobSummaryRow.ended_at) - bindparam("since_epoch", type_=Double)
    return case((JobSummaryRow.run_seconds > inside, inside / JobSummaryRow.run_seconds), else_=1.0)


def window_params(since: datetime, max_run_s: float) -> dict[str, float]:
    return {"since_epoch": since.timestamp(), "max_run_s": max_run_s}
