"""One collection cycle: read the load of running jobs from Prometheus and store it.

For every running job the window runs from just after its last stored point (or from
its start, at most ``BRAIN_COLLECT_LOOKBACK_S`` back) to now minus
``BRAIN_COLLECT_DELAY_S``, on a grid of ``BRAIN_PROMETHEUS_STEP_S`` counted from the epoch,
so that every run asks for the same timestamps. Jobs whose windows start close together
share one set of range queries (one per signal). Series are mapped to jobs and pods,
converted to Brain's units and written through ``brain.services.samples.ingest``, the
path of pushed samples: insert-or-ignore on (node, ts), so nothing is stored twice. OOM
kills become ``oom`` events, idempotent on (job, kind, ts, node).

Failure rules: every query of a group must succeed before anything of it is written; each
job is then written in one transaction of its own. A Prometheus failure ends the cycle
(the next one starts from the stored points again).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from brain.db.models import Job, NodeSample
from brain.domain import EventKind, JobStatus, utcnow
from brain.services.events import EventInput, record_events
from brain.services.nodes import NodeRef, ensure_nodes
from brain.services.samples import NodePoint, ingest
from brain.telemetry import Telemetry
from collectors.client import PrometheusClient, PrometheusError, Series
from collectors.mapping import JobIndex, JobInfo, PodRef, SeriesMapper
from collectors.queries import (
    NODE_SIGNALS,
    OOM_SIGNAL,
    SAMPLE_SIGNALS,
    QuerySet,
    build_queries,
    to_brain_unit,
)

log = logging.getLogger(__name__)

SOURCE = "prometheus"
INGEST_CHUNK = 10_000


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
    context: dict | None = None

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


@dataclass
class _Window:
    job: JobInfo
    first: datetime  # first grid point to store (inclusive)


@dataclass
class _PodData:
    ref: PodRef
    values: dict[datetime, dict[str, float]] = field(default_factory=dict)
    # OOM kills: time -> containers
    kills: dict[datetime, list[str]] = field(default_factory=dict)


def build_queries_from_settings(settings) -> QuerySet:
    return build_queries(
        mapping=settings.collect_mapping,
        pod_name_pattern=settings.pod_name_pattern,
        job_label=settings.job_label,
        role_label=settings.role_label,
        index_label=settings.index_label,
        overrides=settings.prometheus_queries,
        extra_selector=settings.prometheus_selector,
        rate_window=settings.prometheus_rate_window,
    )


class Collector:
    """Runs collection cycles; keeps only a per-job cursor between them (an optimization:
    a job whose pods Prometheus does not know is not asked about again and again)."""

    def __init__(
        self,
        settings,
        session_factory: sessionmaker[Session],
        client: PrometheusClient,
        *,
        telemetry: Telemetry | None = None,
        queries: QuerySet | None = None,
        mapper: SeriesMapper | None = None,
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.client = client
        self.telemetry = telemetry or Telemetry()
        self.queries = queries or build_queries_from_settings(settings)
        self.mapper = mapper or SeriesMapper.from_settings(settings)
        self.step = int(settings.prometheus_step_s)
        if client.on_error is None:
            client.on_error = lambda kind: self.telemetry.collector_errors.labels(kind).inc()
        self._cursor: dict[int, datetime] = {}

    # --- the cycle ----------------------------------------------------------------------

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
        end = self._floor(now - timedelta(seconds=self.settings.collect_delay_s))
        report.end = end
        try:
            candidates, targets = self._load_jobs(job_uids, report)
            windows = self._windows(targets, now, end, since)
        except SQLAlchemyError as exc:
            self._error(report, "database", f"reading jobs: {exc.__class__.__name__}: {exc}")
            return report
        report.jobs = len(windows)
        index = JobIndex(candidates)
        try:
            for number, group in enumerate(self._groups(windows)):
                if self.client.stop.is_set():
                    report.stopped = True
                    break
                self._collect_group(group, end, index, report, count_unmatched=number == 0)
            if not report.stopped:
                # Also proves that Prometheus answers when no job is running.
                report.context = self._context(end, report)
        except PrometheusError as exc:
            if exc.kind == "stopped":
                report.stopped = True
            else:
                report.errors.append(f"Prometheus {exc.kind}: {exc}")
        level = logging.WARNING if report.errors else logging.INFO
        if report.errors or report.stored or report.events or report.jobs:
            log.log(level, "collector cycle up to %s: %s", end.isoformat(), report.summary())
        return report

    def _collect_group(
        self,
        group: list[_Window],
        end: datetime,
        index: JobIndex,
        report: CycleReport,
        *,
        count_unmatched: bool,
    ) -> None:
        start = min(w.first for w in group)
        step = timedelta(seconds=self.step)
        answers: dict[str, list[Series]] = {}
        # Everything is read before anything is written: a failure leaves no half cycle.
        for signal in SAMPLE_SIGNALS:
            answers[signal] = self._range(signal, start, end, report)
        # One step earlier, so a kill at the first point is seen as a rise.
        answers[OOM_SIGNAL] = self._range(OOM_SIGNAL, start - step, end, report)

        by_job = {w.job.id: w for w in group}
        pods: dict[int, dict[str, _PodData]] = {w.job.id: {} for w in group}
        for signal, series_list in answers.items():
            for series in series_list:
                ref = self.mapper.pod_ref(series.labels)
                job = index.resolve(ref) if ref is not None else None
                if job is None:
                    if count_unmatched:
                        report.unmatched_series += 1
                        self.telemetry.collector_series.labels("unmatched").inc()
                    continue
                window = by_job.get(job.id)
                if window is None:
                    continue  # a registered job collected in another group or not selected
                report.matched_series += 1
                self.telemetry.collector_series.labels("matched").inc()
                data = pods[job.id].setdefault(ref.pod, _PodData(ref))
                if signal == OOM_SIGNAL:
                    self._find_kills(series, window.first, data)
                else:
                    self._add_values(signal, series, window.first, end, data)

        for window in group:
            if self.client.stop.is_set():
                report.stopped = True
                return
            if self._write(window, pods[window.job.id].values(), report):
                self._cursor[window.job.id] = end

    def _range(self, signal: str, start: datetime, end: datetime, report: CycleReport):
        report.queries += 1
        return self.client.query_range(self.queries.pod_query(signal), start, end, self.step)

    @staticmethod
    def _add_values(
        signal: str, series: Series, first: datetime, end: datetime, data: _PodData
    ) -> None:
        for ts, value in series.points:
            if first <= ts <= end:
                fields = data.values.setdefault(ts, {})
                # One series per pod is the contract; keep the first if a template breaks it.
                fields.setdefault(signal, to_brain_unit(signal, value))

    @staticmethod
    def _find_kills(series: Series, first: datetime, data: _PodData) -> None:
        """A rise of the OOM-attributed restart count is a kill at that point."""
        container = series.labels.get("container", "")
        previous: float | None = None
        for ts, value in series.points:
            if previous is not None and value > previous and ts >= first:
                data.kills.setdefault(ts, []).append(container)
            previous = value

    def _write(self, window: _Window, pods: Iterable[_PodData], report: CycleReport) -> bool:
        """One transaction for the job: its points and its OOM events, or nothing."""
        points: list[NodePoint] = []
        events: list[EventInput] = []
        event_nodes: list[NodeRef] = []
        for data in pods:
            ref = data.ref
            for ts in sorted(data.values):
                fields = data.values[ts]
                cpu, memory = fields.get("cpu"), fields.get("memory")
                if cpu is None or memory is None:
                    report.incomplete_points += 1
                    continue
                points.append(
                    NodePoint(
                        name=ref.pod,
                        role=ref.role,
                        index=ref.index,
                        ts=ts,
                        cpu=cpu,
                        memory_mib=memory,
                        gpu_util=fields.get("gpu_util"),
                        gpu_memory_mib=fields.get("gpu_memory"),
                        gpu_memory_total_mib=fields.get("gpu_memory_total"),
                    )
                )
            for ts in sorted(data.kills):
                containers = ", ".join(sorted(set(filter(None, data.kills[ts])))) or "?"
                events.append(
                    EventInput(
                        ts=ts,
                        kind=EventKind.oom,
                        node=ref.pod,
                        detail=f"OOMKilled (container {containers}); seen by Prometheus",
                    )
                )
                event_nodes.append(NodeRef(ref.pod, ref.role, ref.index))
        if not points and not events:
            return True
        stored = duplicates = recorded = 0
        try:
            with self.session_factory() as session, session.begin():
                job = session.get(Job, window.job.id)
                if job is None:
                    return True  # deleted meanwhile
                for chunk in range(0, len(points), INGEST_CHUNK):
                    result = ingest(session, job, points[chunk : chunk + INGEST_CHUNK], [])
                    stored += result.accepted
                    duplicates += result.duplicates
                if events:
                    ensure_nodes(session, job, event_nodes)
                    recorded = record_events(session, job, events).accepted
        except SQLAlchemyError as exc:
            self._error(
                report, "database", f"writing job {window.job.uid}: {exc.__class__.__name__}"
            )
            log.error("collector: job %s not written: %s", window.job.uid, exc)
            return False
        report.jobs_written += 1
        report.stored += stored
        report.duplicates += duplicates
        report.events += recorded
        self.telemetry.ingested_points.labels(SOURCE, "stored").inc(stored)
        self.telemetry.ingested_points.labels(SOURCE, "duplicate").inc(duplicates)
        return True

    def _context(self, end: datetime, report: CycleReport) -> dict:
        """Free capacity of the cluster's nodes (node-exporter), for context."""
        free: dict[str, dict[str, float]] = {}
        for signal in NODE_SIGNALS:
            report.queries += 1
            for series in self.client.query(self.queries.node_query(signal), end):
                if series.points:
                    node = series.labels.get("instance", "?")
                    free.setdefault(node, {})[signal] = to_brain_unit(signal, series.points[0][1])
        return {
            "nodes": len(free),
            "free_cpu": round(sum(v.get("node_cpu_free", 0.0) for v in free.values()), 3),
            "free_memory_mib": round(sum(v.get("node_memory_free", 0.0) for v in free.values()), 1),
        }

    # --- jobs and windows ---------------------------------------------------------------

    def _load_jobs(
        self, job_uids: Sequence[str] | None, report: CycleReport
    ) -> tuple[list[JobInfo], list[JobInfo]]:
        columns = (Job.id, Job.uid, Job.name, Job.namespace, Job.started_at, Job.created_at)
        with self.session_factory() as session:
            running = session.execute(
                select(*columns).where(Job.status == JobStatus.running.value)
            ).all()
            selected = []
            if job_uids:
                selected = session.execute(select(*columns).where(Job.uid.in_(job_uids))).all()
        infos = {row.id: _info(row) for row in [*running, *selected]}
        if job_uids:
            found = {row.uid for row in selected}
            for uid in job_uids:
                if uid not in found:
                    report.errors.append(f"no job with uid {uid!r}")
            targets = [infos[row.id] for row in selected]
        else:
            targets = [infos[row.id] for row in running]
        return list(infos.values()), targets

    def _windows(
        self, jobs: list[JobInfo], now: datetime, end: datetime, since: timedelta | None
    ) -> list[_Window]:
        if not jobs:
            return []
        step = timedelta(seconds=self.step)
        last: dict[int, datetime | None] = {}
        if since is None:
            latest = (
                select(func.max(NodeSample.ts))
                .where(NodeSample.job_id == Job.id)
                .correlate(Job)
                .scalar_subquery()
            )
            with self.session_factory() as session:
                rows = session.execute(
                    select(Job.id, latest).where(Job.id.in_([j.id for j in jobs]))
                ).all()
            last = {job_id: ts for job_id, ts in rows}
        lookback = now - timedelta(seconds=self.settings.collect_lookback_s)
        windows = []
        for job in jobs:
            if since is not None:
                # Never before the job began: a reused job name's older pods are not its own.
                first = self._ceil(max(now - since, job.start))
            else:
                stored = last.get(job.id)
                if stored is not None:
                    first = self._floor(stored) + step
                else:
                    first = self._ceil(max(job.start, lookback))
                cursor = self._cursor.get(job.id)
                if cursor is not None:
                    first = max(first, cursor + step)
            if first <= end:
                windows.append(_Window(job, first))
        return windows

    def _groups(self, windows: list[_Window]) -> list[list[_Window]]:
        """Windows starting within a few minutes of each other share one set of queries."""
        slack = timedelta(seconds=max(self.settings.collect_interval_s, 20 * self.step))
        groups: list[list[_Window]] = []
        for window in sorted(windows, key=lambda w: w.first):
            if groups and window.first - groups[-1][0].first <= slack:
                groups[-1].append(window)
            else:
                groups.append([window])
        return groups

    def _floor(self, ts: datetime) -> datetime:
        return datetime.fromtimestamp(math.floor(ts.timestamp() / self.step) * self.step, UTC)

    def _ceil(self, ts: datetime) -> datetime:
        return datetime.fromtimestamp(math.ceil(ts.timestamp() / self.step) * self.step, UTC)

    def _error(self, report: CycleReport, kind: str, message: str) -> None:
        report.errors.append(message)
        self.telemetry.collector_errors.labels(kind).inc()


def _info(row) -> JobInfo:
    start = row.started_at or row.created_at
    return JobInfo(id=row.id, uid=row.uid, name=row.name, namespace=row.namespace, start=start)
