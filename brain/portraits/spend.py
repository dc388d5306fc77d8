"""Dollars over sets of jobs: their resource-hours per GPU type, priced (GPUs cost what
their type costs, so the hours are summed per type before pricing)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import Session

from brain.costs import Cost, Prices
from brain.db.engine import ReadSession
from brain.db.models import JobRow, JobUsageDayRow
from brain.history.plausible import DEFAULT_MAX_RUN_S
from brain.portraits.suggestions import Suggestion
from brain.portraits.usage import KEYS, sums, usage_params, window_rows
from brain.summaries.hours import Hours


def spend_by(
    session: ReadSession,
    kind: str,
    keys: Iterable[str | None],
    since: datetime,
    prices: Prices,
    namespace: str | None = None,
    end: datetime | None = None,
    max_run_s: float = DEFAULT_MAX_RUN_S,
) -> dict[str | None, Cost]:
    """The cost of the jobs ended since ``since`` (and before ``end`` when given) of each
    of ``keys`` (a None key: the jobs without one) of ``kind`` (user, group, namespace,
    dataset, gpu_type); with ``namespace``, of that namespace's jobs only. The hours
    priced are those the portraits total: believed runs only (``max_run_s``), each its
    share inside the window, summed from the runs' day rows (``brain.portraits.usage``)."""
    wanted = list(dict.fromkeys(keys))
    if not wanted:
        return {}
    named = [k for k in wanted if k is not None]
    statement = _spend(kind, bool(named), None in wanted, namespace is not None, end is not None)
    params = usage_params(since, end, max_run_s) | {"keys": named, "namespace": namespace}
    found = session.execute(statement, params)
    spent: dict[str | None, Cost] = {k: Cost(0.0, 0.0) for k in wanted}
    for row in found:
        spent[row.key] = spent[row.key] + prices.of(Hours.of(row), row.gpu_type)
    return spent


@cache
def _spend(kind: str, named: bool, none: bool, by_namespace: bool, bounded: bool) -> Select:
    # Built once per shape on bound parameters: building it took longer than running it.
    column = KEYS[kind]
    matches = [column.in_(bindparam("keys", expanding=True))] if named else []
    if none:
        matches.append(column.is_(None))
    narrowed = [or_(*matches)]
    if by_namespace:
        narrowed.append(JobUsageDayRow.namespace == bindparam("namespace"))
    rows = window_rows({"key": column, "gpu_type": JobUsageDayRow.gpu_type}, narrowed, bounded)
    return select(rows.c.key, rows.c.gpu_type, *sums(rows)).group_by(rows.c.key, rows.c.gpu_type)


@dataclass(frozen=True)
class RunSpend:
    """Dollars a day of a suggested run's allocation, and of the last related run's."""

    suggested_usd_per_day: float
    last_run_uid: str | None
    last_run_usd_per_day: float | None

    @property
    def saves_usd_per_day(self) -> float | None:
        if self.last_run_usd_per_day is None:
            return None
        return self.last_run_usd_per_day - self.suggested_usd_per_day


def run_spend(
    session: Session, suggestion: Suggestion, prices: Prices, gpu_type: str | None
) -> RunSpend | None:
    """What the suggested run would cost a day against what the newest run of its basis
    requested; None without prices. A role's unknown count or size counts as the last
    run's (the suggestion keeps it); a role whose count nobody knows is not priced."""
    if not prices.configured:
        return None
    last = None
    if suggestion.basis.runs:
        run = suggestion.basis.runs[0]
        column = JobRow.namespace
        namespace = column.is_(None) if run.namespace is None else column == run.namespace
        last = session.execute(
            select(JobRow.uid, JobRow.roles, JobRow.gpu_type).where(
                JobRow.uid == run.uid, namespace
            )
        ).first()
    before: dict = dict(last.roles) if last is not None else {}
    gpu_type = gpu_type or (last.gpu_type if last is not None else None)

    def per_day(count, cpu, memory_mib, gpu) -> float:
        return (count or 0) * prices.per_day(cpu or 0.0, memory_mib or 0.0, gpu or 0.0, gpu_type)

    suggested = 0.0
    for role in suggestion.roles:
        was = before.get(role.role)
        suggested += per_day(
            role.count if role.count is not None else (was.count if was else None),
            role.cpu_request if role.cpu_request is not None else (was.cpu if was else None),
            role.memory_mib if role.memory_mib is not None else (was.memory_mib if was else None),
            role.gpu if role.gpu is not None else (was.gpu if was else None),
        )
    if last is None or not before:
        # Nothing to compare with: no related run, or one that declared no roles.
        return RunSpend(suggested, None if last is None else last.uid, None)
    previous = sum(per_day(s.count, s.cpu, s.memory_mib, s.gpu) for s in before.values())
    return RunSpend(suggested, last.uid, previous)
