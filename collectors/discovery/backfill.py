"""Backfill: discover every training job that ran in the past and read its history.

The past is walked oldest first in windows of ``BRAIN_DISCOVERY_CHUNK_S`` (6 hours by
default). For each window, discovery finds the jobs whose pods lived in it (finished ones
with their final status) and registers them, then their load is read at
``BRAIN_DISCOVERY_HISTORY_STEP_S`` (5 minutes by default), each point keeping the step's
mean CPU and GPU use and its peak memory (``max_over_time``), and written; a job that
finished in the window is summarized (the cluster's state is not: the newest state must
stay the newest). A window is 14 queries of at most
``chunk / step + 1`` points per series (73 by default; Prometheus refuses more than
11,000), each bounded by ``BRAIN_PROMETHEUS_TIMEOUT_S``, and what is held in memory is one
window's answers, whatever the span.

Everything is written as a live cycle writes it (insert-or-ignore points, idempotent
events, jobs merged), so running a backfill twice changes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from brain.config import CollectorSettings
from brain.domain import utcnow
from brain.telemetry import Telemetry
from collectors.client import PrometheusClient
from collectors.scrape import Collector


@dataclass
class BackfillReport:
    start: datetime
    end: datetime
    windows: int = 0
    windows_done: int = 0
    jobs: set[int] = field(default_factory=set)
    discovered_new: int = 0
    stored: int = 0
    duplicates: int = 0
    events: int = 0
    queries: int = 0
    stopped: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        text = (
            f"backfill {self.start.isoformat()} .. {self.end.isoformat()}: "
            f"{self.windows_done}/{self.windows} window(s), {len(self.jobs)} job(s) "
            f"({self.discovered_new} new), {self.stored} point(s) stored, "
            f"{self.duplicates} duplicate(s), {self.events} event(s), {self.queries} queries"
        )
        if self.errors:
            text += f"; errors: {'; '.join(self.errors)}"
        return text


def windows(start: datetime, end: datetime, chunk_s: int, step_s: int) -> list[tuple]:
    """``(start, end]`` cut into windows of whole steps, at most ``chunk_s`` long."""
    chunk = max(step_s, chunk_s // step_s * step_s)
    cuts = []
    a = start
    while a < end:
        b = min(a + timedelta(seconds=chunk), end)
        cuts.append((a, b))
        a = b
    return cuts


def backfill(
    settings: CollectorSettings,
    session_factory: sessionmaker[Session],
    client: PrometheusClient,
    span: timedelta,
    *,
    now: datetime | None = None,
    telemetry: Telemetry | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BackfillReport:
    """Discover and read the ``span`` before ``now`` (minus the collect delay)."""
    step_s = settings.discovery_history_step_s
    now = now or utcnow()
    end = _floor(now - timedelta(seconds=settings.collect_delay_s), step_s)
    start = _floor(end - span, step_s)
    report = BackfillReport(start=start, end=end)
    collector = Collector(
        settings.model_copy(update={"discovery": True}),
        session_factory,
        client,
        telemetry=telemetry,
        history_step_s=step_s,
    )
    cuts = windows(start, end, settings.discovery_chunk_s, step_s)
    report.windows = len(cuts)
    step = timedelta(seconds=step_s)
    for a, b in cuts:
        if client.stop.is_set():
            report.stopped = True
            break
        # The window's points are those after its start (the previous window's last).
        cycle = collector.run_cycle(now=b, since=b - a - step, discover_from=a)
        report.queries += cycle.queries
        report.stored += cycle.stored
        report.duplicates += cycle.duplicates
        report.events += cycle.events
        report.discovered_new += cycle.discovered_new
        report.jobs.update(collector.last_discovered_ids)
        if cycle.stopped:
            report.stopped = True
            break
        if not cycle.ok:
            report.errors.extend(cycle.errors)
            break
        report.windows_done += 1
        if progress is not None:
            progress(report.windows_done, report.windows)
    return report


def _floor(ts: datetime, step_s: int) -> datetime:
    return datetime.fromtimestamp(math.floor(ts.timestamp() / step_s) * step_s, UTC)
