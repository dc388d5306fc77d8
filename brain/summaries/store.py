"""Keep job summaries: compute, replace, and find the jobs that need one."""

from __future__ import annotations

import logging
import time
from datetime import datetime

from sqlalchemy import delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from brain.db.models import JobRow, JobSummaryRow, NodeSummaryRow, RoleSummaryRow
from brain.domain import JobStatus, utcnow
from brain.history.related import unsummarized_related
from brain.summaries.compute import SummaryRows, compute_summary, copy_job_keys

log = logging.getLogger(__name__)

FINISHED = [s.value for s in JobStatus if s.finished]


def summarize_job(session: Session, job: JobRow, now: datetime | None = None) -> JobSummaryRow:
    """Compute the job's summary (job, roles, nodes) and store it in place of any earlier one.

    Idempotent: summarizing again replaces the rows. One exception keeps portraits safe
    from retention: when a final summary exists and the raw samples left are fewer than
    it was computed from (old points were aged out), the stored numbers stay and only
    the job's identifying fields are refreshed. A finished job's summary is final and
    sets ``job.summarized_at``; a running job's is a snapshot that leaves it unset, so
    retention keeps its raw samples for the final summary. The caller commits.
    """
    now = now or utcnow()
    rows = compute_summary(session, job, now)
    existing = session.get(JobSummaryRow, job.id)
    if existing is not None and existing.final and existing.samples > rows.job.samples:
        log.info(
            "job %s: keeping the summary of %d samples (%d left)",
            job.uid,
            existing.samples,
            rows.job.samples,
        )
        copy_job_keys(existing, job)
        session.flush()
        return existing
    replace_summary(session, rows)
    if rows.job.final:
        job.summarized_at = now
    session.flush()
    return rows.job


def summarize_missing_related(session: Session, **related_keys) -> int:
    """Summarize now, in the caller's transaction, the related succeeded jobs whose summary
    is not written yet (``related_keys``: those of ``unsummarized_related``), so that the
    create stage or a suggestion right after a related job finished sees it. Returns how
    many it summarized.

    The trade-off: a finish report (PATCH, DLRover's exit reason) answers at once and its
    job is summarized after the response, because a huge job's summary takes seconds
    (1.5 s for 100 nodes x 24 h of 15 s samples) that the reporter should not wait for;
    the first reader that needs it earlier pays that instead, once. Usually the
    background summary has won the race and there is nothing to do here.
    """
    done = 0
    for job in unsummarized_related(session, **related_keys):
        try:
            with session.begin_nested():
                summarize_job(session, job)
            done += 1
        except IntegrityError:
            # The background summary of the same job was stored meanwhile: it is there.
            log.info("job %s: summarized concurrently; reading that summary", job.uid)
    return done


def replace_summary(session: Session, rows: SummaryRows) -> None:
    job_id = rows.job.job_id
    # The default synchronization also takes loaded rows out of the session.
    for model in (NodeSummaryRow, RoleSummaryRow, JobSummaryRow):
        session.execute(delete(model).where(model.job_id == job_id))
    session.add(rows.job)
    session.flush()
    session.add_all([*rows.roles, *rows.nodes])


def jobs_to_summarize(
    session: Session, *, everything: bool = False, running: bool = False
) -> list[str]:
    """Uids of jobs to (re)summarize, oldest first.

    Default: finished jobs without a final summary. ``everything``: every finished job.
    ``running``: running jobs (their snapshot summaries are refreshed).
    """
    if running:
        query = select(JobRow.uid).where(JobRow.status == JobStatus.running.value)
    else:
        query = select(JobRow.uid).where(JobRow.status.in_(FINISHED))
        if not everything:
            final = select(JobSummaryRow.job_id).where(JobSummaryRow.final.is_(True))
            query = query.where(or_(JobRow.summarized_at.is_(None), JobRow.id.not_in(final)))
    return list(session.scalars(query.order_by(JobRow.id)))


def summarize_uids(factory: sessionmaker[Session], uids: list[str]) -> int:
    """Summarize each job in its own transaction; returns how many succeeded."""
    done = 0
    started = time.monotonic()
    for position, uid in enumerate(uids, 1):
        with factory() as session:
            job = session.scalar(select(JobRow).where(JobRow.uid == uid))
            if job is None:
                log.error("no job with uid %r", uid)
                continue
            try:
                summarize_job(session, job)
                session.commit()
                done += 1
            except Exception:  # one bad job must not stop a backfill
                log.exception("cannot summarize job %s", uid)
        if position % 500 == 0:
            log.info("%d/%d jobs in %.0f s", position, len(uids), time.monotonic() - started)
    return done
