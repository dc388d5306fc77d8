"""Keep summaries current inside ``brain serve``, then apply raw-sample retention.

A finished job is summarized when it finishes; samples that arrive later (history
loaded after the fact) mark its summary stale, and running jobs only have snapshots.
This thread catches both up every ``BRAIN_SUMMARY_INTERVAL_S`` seconds, runs what
``brain serve`` hands it to do with the new summaries (storing the savings report's
replay of each, ``brain.savings.stored``) and then, when ``BRAIN_RETENTION_DAYS`` is
set, deletes raw samples that old from summarized jobs (after the replay read them).
Both are idempotent, but only the process leading the background work
(brain.leadership) does them, so the worker processes and
replicas of one database do not repeat each other's work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from brain.config import Settings
from brain.domain import utcnow
from brain.periodic import Periodic
from brain.summaries.retention import delete_old_samples
from brain.summaries.store import jobs_to_summarize, summarize_job_ids

log = logging.getLogger(__name__)


def refresh_once(
    factory: sessionmaker[Session],
    retention_days: int | None = None,
    after_summaries: Callable[[], object] | None = None,
) -> int:
    """Summarize finished jobs without a current summary, refresh running jobs, run
    ``after_summaries`` (if given), then age out raw samples older than
    ``retention_days`` (if given) of summarized jobs. Returns how many jobs were
    summarized."""
    with factory() as session:
        job_ids = jobs_to_summarize(session) + jobs_to_summarize(session, running=True)
    done = summarize_job_ids(factory, job_ids)
    if after_summaries is not None:
        try:
            after_summaries()
        except Exception:  # what reads the summaries must not stop retention
            log.exception("the work after the summaries failed")
    if retention_days:
        with factory() as session:
            deleted = delete_old_samples(session, retention_days, utcnow())
            session.commit()
        if deleted:
            log.info(
                "retention: deleted %d raw samples older than %d days", deleted, retention_days
            )
    return done


def _refresh_and_log(
    factory: sessionmaker[Session],
    retention_days: int | None,
    after_summaries: Callable[[], object] | None,
) -> None:
    done = refresh_once(factory, retention_days, after_summaries)
    if done:
        log.info("refreshed %d job summaries", done)


def start_refresher(
    settings: Settings,
    factory: sessionmaker[Session],
    leading: Callable[[], bool],
    after_summaries: Callable[[], object] | None = None,
) -> Periodic | None:
    """The refresher, started, for ``brain serve`` (``api.server``): every
    ``BRAIN_SUMMARY_INTERVAL_S`` while ``leading()``; None when the interval is 0."""
    if not settings.summary_interval_s:
        return None
    refresher = Periodic(
        "summary refresh",
        settings.summary_interval_s,
        lambda: _refresh_and_log(factory, settings.retention_days, after_summaries),
        only_if=leading,
    )
    refresher.start()
    return refresher
