"""The collector as a long-running service: in ``brain serve`` (``api.server``) or alone
(``brain collect``).

A loop runs a cycle every ``BRAIN_COLLECT_INTERVAL_S`` seconds while this process holds
the collector lock (``collectors.lock``), keeps the outcome for the health report and
stops promptly: the stop event ends the interval wait and any retry backoff at once; a
request in flight ends within ``BRAIN_PROMETHEUS_TIMEOUT_S``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from brain.config import CollectorSettings
from brain.domain import utcnow
from brain.leadership import LockUnavailable, NoLock
from brain.services.collector_store import any_discovered_job
from brain.telemetry import Telemetry
from collectors.client import PrometheusClient
from collectors.discovery.backfill import BackfillReport, backfill
from collectors.discovery.kinds import SelectorError
from collectors.lock import leader_lock
from collectors.mapping import MappingConfigError
from collectors.queries import QueryConfigError
from collectors.scrape import Collector, CycleReport

log = logging.getLogger(__name__)

CONFIG_ERRORS = (QueryConfigError, MappingConfigError, SelectorError)
STOP_JOIN_S = 5.0


class CollectorService:
    def __init__(
        self,
        settings: CollectorSettings,
        session_factory: sessionmaker[Session],
        telemetry: Telemetry | None = None,
        *,
        engine: Engine | None = None,
        lock=None,
        client: PrometheusClient | None = None,
        job_uids: Sequence[str] | None = None,
        since: timedelta | None = None,
        interval_s: float | None = None,
        start_backfill: timedelta | None = None,
    ) -> None:
        """``start_backfill``: before the first cycle, discover and read this much of the
        past, unless discovery has stored a job already (``brain serve``'s first start)."""
        self.settings = settings
        self.session_factory = session_factory
        self.telemetry = telemetry
        self.stop_event = threading.Event()
        self.client = client or PrometheusClient.from_settings(settings, stop=self.stop_event)
        self.client.stop = self.stop_event
        try:
            # QueryConfigError / MappingConfigError: a configuration that cannot work.
            self.collector = Collector(settings, session_factory, self.client, telemetry=telemetry)
        except Exception:
            self.client.close()
            raise
        if lock is None:
            lock = leader_lock(engine) if engine is not None else NoLock()
        self.lock = lock
        self.job_uids = list(job_uids) if job_uids else None
        self.interval_s = interval_s or settings.collect_interval_s
        self._since = since
        self._start_backfill = start_backfill
        self.backfill_report: BackfillReport | None = None
        # The first start's backfill as /readyz shows it while it runs and after.
        self._backfill_progress: dict[str, Any] | None = None
        self._thread: threading.Thread | None = None
        self._state_lock = threading.Lock()
        self._role = "starting"
        self._last: CycleReport | None = None
        self._last_success: datetime | None = None
        self._failing_since: datetime | None = None
        self._failures = 0
        self._crash: str | None = None

    # --- running ------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="brain-collector", daemon=True)
        self._thread.start()
        url = self.client.display_url
        log.info("Prometheus collector started: %s every %gs", url, self.interval_s)

    def stop(self, timeout: float = STOP_JOIN_S) -> None:
        """Stop the loop and release the lock; returns within about ``timeout`` seconds."""
        self.stop_event.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)
            if thread.is_alive():
                log.warning("collector thread still busy after %.0fs; leaving it", timeout)
        self.close()

    def close(self) -> None:
        self.lock.release()
        self.client.close()

    def run_forever(self) -> None:
        """The loop, in the calling thread, until ``stop_event`` is set."""
        self._run()

    def _run(self) -> None:
        try:
            while self._start_backfill is not None and not self.stop_event.is_set():
                try:
                    leader = self.lock.acquire()
                except LockUnavailable as exc:
                    log.error("collector: %s", exc)
                    leader = False
                if leader:
                    self.first_start_backfill()
                    break
                self.stop_event.wait(self.interval_s)  # standby: the leader backfills
            while not self.stop_event.is_set():
                self.tick()
                self.stop_event.wait(self.interval_s)
        except BaseException as exc:  # the health report must say that the loop is gone
            with self._state_lock:
                self._crash = f"{exc.__class__.__name__}: {exc}"
            log.exception("collector loop ended")
            raise

    def first_start_backfill(self, now: datetime | None = None) -> BackfillReport | None:
        """The first start's backfill (once; skipped when a job was discovered before)."""
        span, self._start_backfill = self._start_backfill, None
        if span is None:
            return None
        with self.session_factory() as session:
            if any_discovered_job(session):
                return None
        with self._state_lock:
            self._role = "backfilling"
        log.info("discovering the training jobs of the last %s", span)

        def progress(done: int, total: int) -> None:
            with self._state_lock:
                self._backfill_progress = {"windows": total, "windows_done": done}

        report = backfill(
            self.settings,
            self.session_factory,
            self.client,
            span,
            now=now,
            telemetry=self.telemetry,
            progress=progress,
        )
        log.log(logging.WARNING if report.errors else logging.INFO, "%s", report.summary())
        with self._state_lock:
            self.backfill_report = report
            self._backfill_progress = {
                "windows": report.windows,
                "windows_done": report.windows_done,
                "jobs": len(report.jobs),
                "stored": report.stored,
                "finished": True,
                **({"error": report.errors[-1][:500]} if report.errors else {}),
            }
            self._role = "starting"
        return report

    def tick(self, now: datetime | None = None) -> CycleReport | None:
        """One cycle if this replica holds the lock; ``None`` on standby."""
        try:
            leader = self.lock.acquire()
        except LockUnavailable as exc:
            log.error("collector: %s", exc)
            report = CycleReport(started_at=utcnow(), errors=[f"database: {exc}"])
            self._record(report)
            return report
        if not leader:
            with self._state_lock:
                if self._role != "standby":
                    log.info("another replica runs the collector; standing by")
                self._role = "standby"
            return None
        with self._state_lock:
            self._role = "leader"
        return self.run_once(now=now)

    def run_once(self, now: datetime | None = None) -> CycleReport:
        """One cycle without the lock (``brain collect --once``, tests)."""
        try:
            report = self.collector.run_cycle(now=now, job_uids=self.job_uids, since=self._since)
        except Exception as exc:  # a bug must not kill the loop; it is reported
            log.exception("collector cycle failed")
            report = CycleReport(started_at=utcnow(), errors=[f"{exc.__class__.__name__}: {exc}"])
        if report.ok and not report.stopped:
            self._since = None  # a backfill is done once
        self._record(report)
        return report

    def _record(self, report: CycleReport) -> None:
        with self._state_lock:
            if report.stopped and report.ok:
                return
            self._last = report
            if report.ok:
                self._last_success = report.started_at
                self._failing_since = None
                self._failures = 0
            else:
                self._failing_since = self._failing_since or report.started_at
                self._failures += 1

    # --- health -------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        with self._state_lock:
            role, last, crash = self._role, self._last, self._crash
            last_success, failing_since, failures = (
                self._last_success,
                self._failing_since,
                self._failures,
            )
        detail: dict[str, Any] = {"prometheus": self.client.display_url, "role": role}
        with self._state_lock:
            if self._backfill_progress is not None:
                detail["backfill"] = dict(self._backfill_progress)
        if last_success is not None:
            detail["last_success"] = last_success.isoformat()
        thread = self._thread
        if crash is not None or (
            thread is not None and not thread.is_alive() and not self.stop_event.is_set()
        ):
            detail["error"] = f"collector loop ended: {crash or 'unknown'}"
            return {"status": "degraded", "detail": detail}
        if role == "standby":
            detail["note"] = "another replica holds the collector lock"
            return {"status": "ok", "detail": detail}
        if role == "backfilling":
            detail["note"] = "discovering the training jobs of the past (first start)"
            return {"status": "ok", "detail": detail}
        if last is None:
            detail["note"] = "no cycle finished yet"
            return {"status": "ok", "detail": detail}
        detail["last_cycle"] = last.started_at.isoformat()
        if not last.ok:
            detail["error"] = last.errors[-1][:500]
            detail["failing_since"] = failing_since.isoformat() if failing_since else None
            detail["failed_cycles"] = failures
            return {"status": "degraded", "detail": detail}
        stale_after = timedelta(seconds=max(3 * self.interval_s, 300))
        if last_success is not None and utcnow() - last_success > stale_after:
            detail["error"] = "no cycle finished recently"
            return {"status": "degraded", "detail": detail}
        detail.update(
            jobs=last.jobs,
            stored=last.stored,
            events=last.events,
            unmatched_series=last.unmatched_series,
            discovered_jobs=last.discovered_jobs,
        )
        if last.cluster is not None:
            detail["cluster"] = {**asdict(last.cluster), "ts": last.cluster.ts.isoformat()}
        return {"status": "ok", "detail": detail}
