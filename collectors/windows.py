"""Planning a cycle: which stretch of time to read for each job, on which grid, and which
jobs share one set of queries.

Every point lies on a grid of ``BRAIN_PROMETHEUS_STEP_S`` counted from the epoch, so every
run asks for the same timestamps. A job's window runs from just after its last stored
point (the first time: from its start, at most ``BRAIN_COLLECT_LOOKBACK_S`` back) to now
minus ``BRAIN_COLLECT_DELAY_S``. Pure: the stored times come from
``brain.services.collector_store``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from brain.config import CollectorSettings
from brain.services.collector_store import CollectableJob

# Windows starting within this many steps (or one interval, if longer) share queries.
GROUP_STEPS = 20


@dataclass(frozen=True)
class Window:
    job: CollectableJob
    first: datetime  # first grid point to store (inclusive); the last is the cycle's end


class WindowPlanner:
    def __init__(
        self, *, step_s: int, lookback_s: float, delay_s: float, interval_s: float
    ) -> None:
        self.step_s = int(step_s)
        self.step = timedelta(seconds=self.step_s)
        self.lookback = timedelta(seconds=lookback_s)
        self.delay = timedelta(seconds=delay_s)
        self.group_slack = timedelta(seconds=max(interval_s, GROUP_STEPS * self.step_s))

    @classmethod
    def from_settings(cls, settings: CollectorSettings) -> WindowPlanner:
        return cls(
            step_s=settings.prometheus_step_s,
            lookback_s=settings.collect_lookback_s,
            delay_s=settings.collect_delay_s,
            interval_s=settings.collect_interval_s,
        )

    def end(self, now: datetime) -> datetime:
        """The last grid point of a cycle at ``now``: scrapes younger than the delay wait."""
        return self.floor(now - self.delay)

    def windows(
        self,
        jobs: Sequence[CollectableJob],
        now: datetime,
        end: datetime,
        *,
        last_stored: Mapping[int, datetime | None],
        cursors: Mapping[int, datetime],
        since: timedelta | None = None,
    ) -> list[Window]:
        """The jobs with something to read up to ``end``. ``last_stored``: each job's newest
        stored point; ``cursors``: where this collector's earlier cycles ended (a job
        Prometheus has nothing for is not asked again and again); ``since``: a backfill
        from ``now - since`` that ignores both."""
        lookback_start = now - self.lookback
        windows = []
        for job in jobs:
            if since is not None:
                # Never before the job began: a reused job name's older pods are not its own.
                first = self.ceil(max(now - since, job.start))
            else:
                stored = last_stored.get(job.id)
                if stored is not None:
                    first = self.floor(stored) + self.step
                else:
                    first = self.ceil(max(job.start, lookback_start))
                cursor = cursors.get(job.id)
                if cursor is not None:
                    first = max(first, cursor + self.step)
            if first <= end:
                windows.append(Window(job, first))
        return windows

    def groups(self, windows: Sequence[Window]) -> list[list[Window]]:
        """Windows starting within ``group_slack`` of a group's first share its queries."""
        groups: list[list[Window]] = []
        for window in sorted(windows, key=lambda w: w.first):
            if groups and window.first - groups[-1][0].first <= self.group_slack:
                groups[-1].append(window)
            else:
                groups.append([window])
        return groups

    def floor(self, ts: datetime) -> datetime:
        return datetime.fromtimestamp(math.floor(ts.timestamp() / self.step_s) * self.step_s, UTC)

    def ceil(self, ts: datetime) -> datetime:
        return datetime.fromtimestamp(math.ceil(ts.timestamp() / self.step_s) * self.step_s, UTC)
