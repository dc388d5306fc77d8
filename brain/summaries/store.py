"""Keep job summaries: compute, replace, and find the jobs that need one."""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from brain.db.models import JobRow, JobSummaryRow, NodeSummaryRow, RoleSummaryRow
from brain.domain import JobStatus, utcnow
from brain.history.related import Related, RelatedQuery, find_related
from brain.summaries.compute import SummaryRows, compute_summaries, copy_job_keys
from brain.summaries.usage_days import clear_usage_days, write_usage_days

log = logging.getLogger(__name__)

FINISHED = [s.value for s in JobStatus if s.finished]
# Jobs summarized per transaction by a backfill: each kind of input is read for all of
# them in one statement. A batch of huge jobs stays within memory: its raw samples are
# aggregated by PostgreSQL, and only per-node and per-bucket rows come back.
BATCH_JOBS = 50


def summarize_job(session: Session, job: JobRow, now: datetime | None = None) -> JobSummaryRow:
    """Compute the job's summary (job, roles, nodes) and store it in place of any earlier one.

    Idempotent: summarizing again replaces the rows. One exception keeps portraits safe
    from retention: when a final summary exists and the raw samples left are fewer than
    it was computed from (old points were aged out), the stored numbers stay and only
    the job's identifying fields and its event counts (OOM kills, failures) are
    refreshed. A finished job's summary is final and
    sets ``job.summarized_at``; a running job's is a snapshot that leaves it unset, so
    retention keeps its raw samples for the final summary. The caller commits.
    """
    return summarize_jobs(session, [job], now)[0]


def summarize_jobs(
    session: Session, jobs: list[JobRow], now: datetime | None = None
) -> list[JobSummaryRow]:
    """``summarize_job`` of each job, in a few statements for all of them."""
    now = now or utcnow()
    computed = compute_summaries(session, jobs, now)
    existing = {
        row.job_id: row
        for row in session.scalars(
            select(JobSummaryRow).where(JobSummaryRow.job_id.in_([job.id for job in jobs]))
        )
    }
    stored, replaced = [], []
    for job, rows in zip(jobs, computed, strict=True):
        kept = existing.get(job.id)
        if kept is not None and kept.final and kept.samples > rows.job.samples:
            log.info(
                "job %s: keeping the summary of %d samples (%d left)",
                job.uid,
                kept.samples,
                rows.job.samples,
            )
            copy_job_keys(kept, job)
            _refresh_counts(session, kept, rows)
            stored.append(kept)
            if rows.job.final:
                # Current again: the refresher leaves it, and retention may age it out.
                job.summarized_at = now
            continue
        replaced.append(rows)
        stored.append(rows.job)
        if rows.job.final:
            job.summarized_at = now
    # The day rows follow the summaries, kept ones too (their keys and counts change).
    clear_usage_days(session, [job.id for job in jobs])
    replace_summaries(session, replaced)
    session.flush()
    write_usage_days(session, stored)
    return stored


def _refresh_counts(session: Session, kept: JobSummaryRow, rows: SummaryRows) -> None:
    """Events are never aged out: OOM kills and failures recorded late count on a kept
    summary too, on the job and on its roles and nodes (the job page's per-role column).
    A role or node the kept summary has no row for (a node first named by a late event)
    counts on the job only."""
    kept.oom_count, kept.failure_count = rows.job.oom_count, rows.job.failure_count
    roles = set(
        session.scalars(select(RoleSummaryRow.role).where(RoleSummaryRow.job_id == kept.job_id))
    )
    role_counts = [
        {
            "job_id": kept.job_id,
            "role": r.role,
            "oom_count": r.oom_count,
            "failure_count": r.failure_count,
        }
        for r in rows.roles
        if r.role in roles
    ]
    nodes = set(
        session.scalars(select(NodeSummaryRow.node_id).where(NodeSummaryRow.job_id == kept.job_id))
    )
    node_counts = [
        {key: node.columns[key] for key in ("job_id", "node_id", "oom_count", "failure_count")}
        for node in rows.node_values
        if node.columns["node_id"] in nodes
    ]
    # Bulk UPDATEs by primary key.
    for model, values in ((RoleSummaryRow, role_counts), (NodeSummaryRow, node_counts)):
        if values:
            session.execute(update(model), values)


def fresh_related(session: Session, query: RelatedQuery) -> Related:
    """``find_related``, having first summarized, in the caller's transaction, the related
    succeeded jobs whose summary is not written yet, so that the create stage or a
    suggestion right after a related job finished sees it.

    The trade-off: a finish report (PATCH, DLRover's exit reason) answers at once and its
    job is summarized after the response, because a huge job's summary takes about a
    second (100 nodes x 24 h of 15 s samples; more on a busy machine) that the reporter
    should not wait for; the first reader that needs it earlier pays that instead, once.
    Usually the background summary has won the race and the first answer is the one used.
    """
    related = find_related(session, query)
    if not related.unsummarized:
        return related
    for job in related.unsummarized:
        try:
            with session.begin_nested():
                summarize_job(session, job)
        except IntegrityError:
            # The background summary of the same job was stored meanwhile: it is there.
            log.info("job %s: summarized concurrently; reading that summary", job.uid)
    return find_related(session, query)


def replace_summaries(session: Session, summaries: list[SummaryRows]) -> None:
    if not summaries:
        return
    job_ids = [rows.job.job_id for rows in summaries]
    # The default synchronization also takes loaded rows out of the session.
    for model in (NodeSummaryRow, RoleSummaryRow, JobSummaryRow):
        session.execute(delete(model).where(model.job_id.in_(job_ids)))
    session.add_all([rows.job for rows in summaries])
    session.flush()
    # Role and node rows go in as plain values in bulk INSERTs: nothing reads them back
    # from this session, and the unit of work's bookkeeping per object is what a
    # backfill (~10 rows per job) would otherwise pay.
    roles = [_column_values(row) for rows in summaries for row in rows.roles]
    nodes = [node.columns for rows in summaries for node in rows.node_values]
    for model, values in ((RoleSummaryRow, roles), (NodeSummaryRow, nodes)):
        if values:
            session.execute(insert(model).execution_options(render_nulls=True), values)


def _column_values(row: RoleSummaryRow) -> dict[str, Any]:
    return {attr.key: getattr(row, attr.key) for attr in row.__mapper__.column_attrs}


def jobs_to_summarize(
    session: Session, *, everything: bool = False, running: bool = False
) -> list[int]:
    """Ids of jobs to (re)summarize, oldest first.

    Default: finished jobs without a final summary. ``everything``: every finished job.
    ``running``: running jobs (their snapshot summaries are refreshed).
    """
    if running:
        query = select(JobRow.id).where(JobRow.status == JobStatus.running.value)
    else:
        query = select(JobRow.id).where(JobRow.status.in_(FINISHED))
        if not everything:
            final = select(JobSummaryRow.job_id).where(JobSummaryRow.final.is_(True))
            query = query.where(or_(JobRow.summarized_at.is_(None), JobRow.id.not_in(final)))
    return list(session.scalars(query.order_by(JobRow.id)))


def job_ids_of_uid(session: Session, uid: str) -> list[int]:
    """The ids of the jobs with this uid, in every namespace (uids are per namespace)."""
    return list(session.scalars(select(JobRow.id).where(JobRow.uid == uid).order_by(JobRow.id)))


def summarize_job_ids(factory: sessionmaker[Session], job_ids: list[int]) -> int:
    """Summarize the jobs, ``BATCH_JOBS`` per transaction; returns how many succeeded.

    A batch that fails is summarized again one job per transaction, so one bad job
    neither stops a backfill nor loses the others of its batch."""
    done = 0
    started = time.monotonic()
    for position in range(0, len(job_ids), BATCH_JOBS):
        batch = job_ids[position : position + BATCH_JOBS]
        try:
            done += _summarize_batch(factory, batch)
        except Exception:
            log.warning("a batch of %d jobs failed; summarizing them one by one", len(batch))
            done += sum(_summarize_one(factory, job_id) for job_id in batch)
        if (position // BATCH_JOBS + 1) % 10 == 0:
            log.info(
                "%d/%d jobs in %.0f s",
                position + len(batch),
                len(job_ids),
                time.monotonic() - started,
            )
    return done


def _summarize_batch(factory: sessionmaker[Session], job_ids: list[int]) -> int:
    with factory() as session:
        rows = session.scalars(select(JobRow).where(JobRow.id.in_(job_ids)))
        found = {job.id: job for job in rows}
        for job_id in job_ids:
            if job_id not in found:
                log.error("no job with id %d", job_id)
        summarize_jobs(session, [found[job_id] for job_id in job_ids if job_id in found])
        session.commit()
    return len(found)


def _summarize_one(factory: sessionmaker[Session], job_id: int) -> int:
    with factory() as session:
        job = session.get(JobRow, job_id)
        if job is None:
            return 0
        try:
            summarize_job(session, job)
            session.commit()
            return 1
        except Exception:  # one bad job must not stop a backfill
            log.exception("cannot summarize job %s (id %d)", job.uid, job_id)
            return 0
