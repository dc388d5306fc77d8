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
from brain.summaries.store import summarize_job_ids
from brain.telemetry import Telemetry
from collectors import writing
from collectors.client import PrometheusClient, PrometheusError
from collectors.discovery.cycle import (
    DiscoveredIndex,
    DiscoveredMapper,
    Discovery,
    DiscoveryResult,
)
from collectors.discovery.kinds import TRAINING_OWNERS
from collectors.loads import PodLoad, map_group
from collectors.mapping import JobIndex, SeriesMapper
from collectors.queries import QuerySet, queries_from_settings
from collectors.reading import SOURCE, SignalReader
from collectors.windows import Window, WindowPlanner

log = logging.getLogger(__name__)

DISCOVERY_MIN_WINDOW = timedelta(minutes=10)


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
    # Discovery: training jobs found in the cycle's window, and of them newly stored.
    discovered_jobs: int = 0
    discovered_new: int = 0
    discovered_stopped: int = 0  # running jobs whose pods are gone
    # Finished jobs whose summary a write of this cycle made stale (a late OOM kill).
    stale_summaries: list[int] = field(default_factory=list)
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
        if self.discovered_jobs:
            text += f"; {self.discovered_jobs} job(s) discovered ({self.discovered_new} new)"
        if self.errors:
            text += f"; errors: {'; '.join(self.errors)}"
        return text


class Collector:
    """Runs collection cycles; keeps only a per-job cursor between them (an optimization:
    a job whose pods Prometheus does not know is not asked about again and again) and
    where discovery's last window ended.

    With discovery (``BRAIN_DISCOVERY``), each cycle first discovers the training jobs of
    its window and registers them (``collectors.discovery``); their pods' series are then
    read from pods a training operator or batch Job owns and tied to jobs by discovery,
    other series by the configured mapping. ``history_step_s`` makes a collector of
    history (a backfill): that step, and each point's mean CPU and GPU use and peak memory.
    """

    def __init__(
        self,
        settings: CollectorSettings,
        session_factory: sessionmaker[Session],
        client: PrometheusClient,
        *,
        telemetry: Telemetry | None = None,
        queries: QuerySet | None = None,
        mapper: SeriesMapper | None = None,
        history_step_s: int | None = None,
    ) -> None:
        if history_step_s is not None:
            settings = settings.model_copy(
                update={"prometheus_step_s": history_step_s, "collect_delay_s": 0}
            )
        self.session_factory = session_factory
        self.client = client
        self.telemetry = telemetry or Telemetry()
        self.queries = queries or queries_from_settings(settings, history_step_s=history_step_s)
        self.mapper = mapper or SeriesMapper.from_settings(settings)
        self.planner = WindowPlanner.from_settings(settings)
        self.lookback = timedelta(seconds=settings.collect_lookback_s)
        self.silent_after_s = settings.node_silent_after_s
        self.discovery: Discovery | None = None
        self.training_queries: QuerySet | None = None
        if settings.discovery:
            self.discovery = Discovery(settings, session_factory, client)
            self.training_queries = queries_from_settings(
                settings, training_owners=TRAINING_OWNERS, history_step_s=history_step_s
            )
        self._discovered_until: datetime | None = None
        self.last_discovered_ids: list[int] = []
        if client.on_error is None:
            client.on_error = lambda kind: self.telemetry.collector_errors.labels(kind).inc()
        self._cursor: dict[int, datetime] = {}

    def run_cycle(
        self,
        *,
        now: datetime | None = None,
        job_uids: Sequence[str] | None = None,
        since: timedelta | None = None,
        discover_from: datetime | None = None,
    ) -> CycleReport:
        """Collect once. ``job_uids``: only these jobs (any status), nothing discovered;
        ``since``: read from ``now - since`` whatever is stored (backfill);
        ``discover_from``: discover the jobs of this window only and collect only them
        (a backfill's chunk; else from where the last cycle's discovery ended)."""
        now = now or utcnow()
        report = CycleReport(started_at=utcnow())
        end = self.planner.end(now)
        report.end = end
        found = None
        if self.discovery is not None and not job_uids:
            found = self._discover(discover_from, end, report)
            if found is None:
                return report
        try:
            with self.session_factory() as session:
                jobs = jobs_to_collect(
                    session,
                    job_uids,
                    job_ids=found.job_ids if found else (),
                    only_ids=discover_from is not None,
                )
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
        mapper, queries = self.mapper, self.queries
        if found is not None and found.places:
            mapper = DiscoveredMapper(found.places, self.mapper)
            index = DiscoveredIndex(found.places, jobs.known, index)
            queries = self.training_queries
        reader = SignalReader(self.client, queries, self.planner.step_s)
        try:
            for number, group in enumerate(self.planner.groups(windows)):
                if self.client.stop.is_set():
                    report.stopped = True
                    break
                self._collect_group(
                    group, end, mapper, index, reader, report, first_group=number == 0
                )
            if not report.stopped and discover_from is None:
                # Also proves that Prometheus answers when no job is running. Not for a
                # window of the past: the newest state must stay the newest.
                self._record_cluster(reader.cluster_state(end), report)
        except PrometheusError as exc:
            if exc.kind == "stopped":
                report.stopped = True
            else:
                report.errors.append(f"Prometheus {exc.kind}: {exc}")
        finally:
            report.queries += reader.sent
        summarize = list(report.stale_summaries)
        if found is not None and report.ok and not report.stopped:
            # Their last load is stored: the summaries that portraits and savings read.
            summarize += [i for i in found.finished_ids if i not in report.stale_summaries]
        if summarize:
            summarize_job_ids(self.session_factory, summarize)
        level = logging.WARNING if report.errors else logging.INFO
        if report.errors or report.stored or report.events or report.jobs:
            log.log(level, "collector cycle up to %s: %s", end.isoformat(), report.summary())
        return report

    def _discover(
        self, start: datetime | None, end: datetime, report: CycleReport
    ) -> DiscoveryResult | None:
        """Discover and register the jobs of ``(start, end]``; ``None`` after an error."""
        assert self.discovery is not None
        if start is None:
            start = self._discovered_until or end - self.lookback
            # Never less than a few scrapes of kube-state-metrics: a pod a short window
            # happens to miss would look gone. Seeing a job again changes nothing.
            start = min(start, end - DISCOVERY_MIN_WINDOW)
        if start >= end:
            return DiscoveryResult()
        sent = self.discovery.sent
        try:
            found = self.discovery.run(start, end)
        except PrometheusError as exc:
            if exc.kind == "stopped":
                report.stopped = True
            else:
                report.errors.append(f"Prometheus {exc.kind} (discovery): {exc}")
            return None
        except SQLAlchemyError as exc:
            self._error(report, "database", f"registering jobs: {exc.__class__.__name__}: {exc}")
            return None
        finally:
            report.queries += self.discovery.sent - sent
        self._discovered_until = end
        self.last_discovered_ids = list(found.job_ids)
        report.discovered_jobs = found.found
        report.discovered_new = found.created
        report.discovered_stopped = found.stopped
        return found

    def _collect_group(
        self,
        group: list[Window],
        end: datetime,
        mapper,
        index: JobIndex,
        reader: SignalReader,
        report: CycleReport,
        *,
        first_group: bool,
    ) -> None:
        # Everything is read before anything is written: a failure leaves no half cycle.
        answers = reader.read_group(min(w.first for w in group), end)
        load = map_group(answers, group, end, mapper, index)
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
            result = writing.write(self.session_factory, job.id, prepared.load, self.silent_after_s)
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
        if result.summary_stale:
            report.stale_summaries.append(job.id)
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
