"""Keep summaries current inside ``brain serve``: stale finished jobs and running ones.

A finished job is summarized when it finishes; samples that arrive later (history
loaded after the fact) mark its summary stale, and running jobs only have snapshots.
This thread catches both up every ``BRAIN_SUMMARY_INTERVAL_S`` seconds. Summaries are
idempotent, so two replicas doing it at once waste work but do no harm.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy.orm import Session, sessionmaker

from brain.summaries.store import jobs_to_summarize, summarize_uids

log = logging.getLogger(__name__)


def refresh_once(factory: sessionmaker[Session]) -> int:
    """Summarize finished jobs without a current summary, then refresh running jobs."""
    with factory() as session:
        uids = jobs_to_summarize(session) + jobs_to_summarize(session, running=True)
    return summarize_uids(factory, uids)


class SummaryRefresher:
    def __init__(self, factory: sessionmaker[Session], interval_s: float) -> None:
        self._factory = factory
        self._interval_s = interval_s
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
                done = refresh_once(self._factory)
                if done:
                    log.info("refreshed %d job summaries", done)
            except Exception:  # a bad cycle must not end the thread
                log.exception("summary refresh failed; retrying next cycle")


def attach(app) -> None:
    """App hook (``brain.app_hooks``): run the refresher for the app's lifetime."""
    interval_s = app.state.settings.summary_interval_s
    if not interval_s:
        return
    refresher = SummaryRefresher(app.state.session_factory, interval_s)
    refresher.start()
    app.state.shutdown_hooks.append(refresher.stop)
