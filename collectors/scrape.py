"""One collection cycle: read the load of running jobs from Prometheus and store it.

The cycle is put together from one module per concern:

- ``brain.services.collector_store``: which jobs to collect, where their stored load ends,
  and the write (the collector's only way into the database);
- ``collectors.windows``: each job's window on the step grid, and which jobs share queries;
- ``collectors.reading``: the range queries of a group; the cluster's state (free
  capacity, pending demand), stored through ``brain.services.cluster``;
- ``collectors.loads``: series tied to jobs and pods, in Brain's units, OOM kills found;
- ``collectors.writing``: node points and ``oom`` events through the ingest path of
  pushed samples: insert-or-ignore on (node, ts), events idempotent on (job, kind, ts,
  node), so nothing is stored twice.

Failure rules: every query of a group must succeed before anything of it is written; each
job is then written in one transaction of its own. A Prometheus failure ends the cycle
(the next one starts from the stored points again).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from brain.config import CollectorSettings
from brain.domain import ClusterState, utcnow
from brain.services.cluster import record_cluster_state
from brain.services.collector_store import CollectableJob, jobs_to_collect, last_sample_times
from brain.telemetry import Telemetry
from collectors import writing
from collectors.client import PrometheusClient, PrometheusError
from collectors.loads import PodLoad, map_group
from collectors.mapping import JobIndex, SeriesMapper
from collectors.queries import QuerySet, queries_from_settings
from collectors.reading import SOURCE, SignalReader
from collectors.windows import Window, WindowPlanner

log = logging.getLogger(__name__)


@dataclass
class CycleReport:
    """What one cycle did; ``ok`` when every query and every write succeeded."""

    started_at: datetime
    end: datetime | None = None
    jobs: int = 0
    jobs_written: int = 0
    stored: int = 0
    duplicates: int = 0
    events: int = 0
    matched_series: int = 0
    unmatched_series: int = 0
    incomplete_points: int = 0
    queries: int = 0
    stopped: bool = False
    errors: list[str] = field(default_factory=list)
    cluster: ClusterState | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        text = (
            f"{self.jobs} job(s), {self.stored} point(s) stored, {self.duplicates} duplicate(s), "
            f"{self.events} event(s), {self.matched_series} series matched, "
            f"{self.unmatched_series} unmatched"
        )
        if self.errors:
            text += f"; errors: {'; '.join(self.errors)}"
        return text


class Collector:
    """Runs collection cycles; keeps only a per-job cursor between them (an optimization:
    a job whose pods Prometheus does not know is not asked about again and again)."""

    def __init__(
        self,
        settings: CollectorSettings,
        session_factory: sessionmaker[Session],
        client: PrometheusClient,
        *,
        telemetry: Telemetry | None = None,
        queries: QuerySet | None = None,
        mapper: SeriesMapper | None = None,
    ) -> None:
        self.session_factory = session_factory
        self.client = client
        self.telemetry = telemetry or Telemetry()
        self.queries = queries or queries_from_settings(settings)
        self.mapper = mapper or SeriesMapper.from_settings(settings)
        self.planner = WindowPlanner.from_settings(settings)
        if client.on_error is None:
            client.on_error = lambda kind: self.telemetry.collector_errors.labels(kind).inc()
        self._cursor: dict[int, datetime] = {}

    def run_cycle(
        self,
        *,
        now: datetime | None = None,
        job_uids: Sequence[str] | None = None,
        since: timedelta | None = None,
    ) -> CycleReport:
        """Collect once. ``job_uids``: only these jobs (any status); ``since``: read from
        ``now - since`` whatever is stored (backfill)."""
        now = now or utcnow()
        report = CycleReport(started_at=utcnow())
        end = self.planner.end(now)
        report.end = end
        try:
            with self.session_factory() as session:
                jobs = jobs_to_collect(session, job_uids)
                ids = [job.id for job in jobs.targets]
                last = last_sample_times(session, ids) if since is None else {}
        except SQLAlchemyError as exc:
            self._error(report, "database", f"reading jobs: {exc.__class__.__name__}: {exc}")
            return report
        report.errors.extend(f"no job with uid {uid!r}" for uid in jobs.missing)
        windows = self.planner.windows(
            jobs.targets, now, end, last_stored=last, cursors=self._cursor, since=since
        )
        report.jobs = len(windows)
        index = JobIndex(jobs.known)
        reader = SignalReader(self.client, self.queries, self.planner.step_s)
        try:
            for number, group in enumerate(self.planner.groups(windows)):
                if self.client.stop.is_set():
                    report.stopped = True
                    break
                self._collect_group(group, end, index, reader, report, first_group=number == 0)
            if not report.stopped:
                # Also proves that Prometheus answers when no job is running.
                self._record_cluster(reader.cluster_state(end), report)
        except PrometheusError as exc:
            if exc.kind == "stopped":
                report.stopped = True
            else:
                report.errors.append(f"Prometheus {exc.kind}: {exc}")
        finally:
            report.queries = reader.sent
        level = logging.WARNING if report.errors else logging.INFO
        if report.errors or report.stored or report.events or report.jobs:
            log.log(level, "collector cycle up to %s: %s", end.isoformat(), report.summary())
        return report

    def _collect_group(
        self,
        group: list[Window],
        end: datetime,
        index: JobIndex,
        reader: SignalReader,
        report: CycleReport,
        *,
        first_group: bool,
    ) -> None:
        # Everything is read before anything is written: a failure leaves no half cycle.
        answers = reader.read_group(min(w.first for w in group), end)
        load = map_group(answers, group, end, self.mapper, index)
        report.matched_series += load.matched
        self.telemetry.collector_series.labels("matched").inc(load.matched)
        if first_group:  # every group reads the same unmatched pods: count them once
            report.unmatched_series += load.unmatched
            self.telemetry.collector_series.labels("unmatched").inc(load.unmatched)
        for window in group:
            if self.client.stop.is_set():
                report.stopped = True
                return
            if self._write(window.job, load.pods[window.job.id].values(), report):
                self._cursor[window.job.id] = end

    def _write(self, job: CollectableJob, pods: Iterable[PodLoad], report: CycleReport) -> bool:
        prepared = writing.prepare(pods)
        report.incomplete_points += prepared.incomplete_points
        if prepared.load.empty:
            return True
        try:
            result = writing.write(self.session_factory, job.id, prepared.load)
        except SQLAlchemyError as exc:
            self._error(report, "database", f"writing job {job.uid}: {exc.__class__.__name__}")
            log.error("collector: job %s not written: %s", job.uid, exc)
            return False
        if result is None:
            return True  # deleted meanwhile
        report.jobs_written += 1
        report.stored += result.stored
        report.duplicates += result.duplicates
        report.events += result.events
        self.telemetry.ingested_points.labels(SOURCE, "stored").inc(result.stored)
        self.telemetry.ingested_points.labels(SOURCE, "duplicate").inc(result.duplicates)
        return True

    def _record_cluster(self, state: ClusterState, report: CycleReport) -> None:
        try:
            with self.session_factory() as session, session.begin():
                record_cluster_state(session, state)
        except SQLAlchemyError as exc:
            self._error(report, "database", f"writing cluster state: {exc.__class__.__name__}")
            return
        report.cluster = state

    def _error(self, report: CycleReport, kind: str, message: str) -> None:
        report.errors.append(message)
        self.telemetry.collector_errors.labels(kind).inc()
