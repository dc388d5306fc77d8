"""Keep summaries current inside ``brain serve``, then apply raw-sample retention.

A finished job is summarized when it finishes; samples that arrive later (history
loaded after the fact) mark its summary stale, and running jobs only have snapshots.
This thread catches both up every ``BRAIN_SUMMARY_INTERVAL_S`` seconds and then, when
``BRAIN_RETENTION_DAYS`` is set, deletes raw samples that old from summarized jobs.
Both are idempotent, so two replicas doing it at once waste work but do no harm.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from brain.domain import utcnow
from brain.services.retention import delete_old_samples
from brain.summaries.store import jobs_to_summarize, summarize_uids

log = logging.getLogger(__name__)


def refresh_once(factory: sessionmaker[Session], retention_days: int | None = None) -> int:
    """Summarize finished jobs without a current summary, refresh running jobs, then
    age out raw samples older than ``retention_days`` (if given) of summarized jobs.
    Returns how many jobs were summarized."""
    with factory() as session:
        uids = jobs_to_summarize(session) + jobs_to_summarize(session, running=True)
    done = summarize_uids(factory, uids)
    if retention_days:
        with factory() as session:
            deleted = delete_old_samples(session, retention_days, utcnow())
            session.commit()
        if deleted:
            log.info(
                "retention: deleted %d raw samples older than %d days", deleted, retention_days
            )
    return done


class SummaryRefresher:
    def __init__(
        self, factory: sessionmaker[Session], interval_s: float, retention_days: int | None
    ) -> None:
        self._factory = factory
        self._interval_s = interval_s
        self._retention_days = retention_days
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="summary-refresher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                done = refresh_once(self._factory, self._retention_days)
                if done:
                    log.info("refreshed %d job summaries", done)
            except Exception:  # a bad cycle must not end the thread
                log.exception("summary refresh failed; retrying next cycle")


def attach(app) -> None:
    """App hook (``brain.app_hooks``): run the refresher for the app's lifetime."""
    settings = app.state.settings
    if not settings.summary_interval_s:
        return
    refresher = SummaryRefresher(
        app.state.session_factory, settings.summary_interval_s, settings.retention_days
    )
    refresher.start()
    app.state.shutdown_hooks.append(refresher.stop)
