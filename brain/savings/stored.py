"""The savings report's figures of each finished job, replayed once and stored with its
final summary, so that the report sums stored rows instead of replaying every job.

A job is replayed as the report would replay it (``report.job_savings``: the same main
role, peak node and Brain's default pipeline at the stored cadence), sized from the
runs of its group in its namespace that were summarized before it within the report's
history window (every namespace's with ``BRAIN_HISTORY_ACROSS_NAMESPACES``, as plans).
Summarizing a job again (new samples) clears its figures, and the next pass replays it.
"""

from __future__ import annotations

import logging
from itertools import groupby

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from brain.config import Settings
from brain.db.models import JobSummaryRow
from brain.domain import as_utc, utcnow
from brain.history.scope import history_namespaces
from brain.optimizing import OptimizerRegistry
from brain.replay.brain_policy import BrainLoop
from brain.replay.harness import HarnessSettings
from brain.replay.site_runs import load_runs, load_series
from brain.savings.gpu import gpu_target
from brain.savings.report import STORED, STORED_CADENCE_S, job_savings

log = logging.getLogger(__name__)

# Jobs replayed per pass: a backlog is worked off over several passes.
MAX_JOBS_PER_PASS = 5000


def store_savings(
    session: Session,
    registry: OptimizerRegistry,
    settings: Settings,
    *,
    limit: int = MAX_JOBS_PER_PASS,
) -> int:
    """Replays the finished jobs whose figures are not stored yet and stores them, group
    by group (a group of one namespace), whole groups until ``limit`` jobs are done;
    returns how many. The caller commits. A group is never split across passes: its
    jobs are sized from one read of its runs, as the report's own replay sizes them."""
    pending = session.execute(
        select(
            JobSummaryRow.job_id,
            JobSummaryRow.namespace,
            JobSummaryRow.group_key,
            JobSummaryRow.ended_at,
        )
        .where(JobSummaryRow.final.is_(True), JobSummaryRow.savings_computed_at.is_(None))
        .order_by(
            JobSummaryRow.namespace,
            JobSummaryRow.group_key,
            JobSummaryRow.ended_at,
            JobSummaryRow.job_id,
        )
    ).all()
    loop = BrainLoop(registry, settings)
    harness = HarnessSettings(cadence_s=STORED_CADENCE_S)
    target = gpu_target(registry, settings)
    now = utcnow()
    done = 0
    across = settings.history_across_namespaces
    for (namespace, group), found_rows in groupby(
        pending, key=lambda r: (r.namespace, r.group_key)
    ):
        if done >= limit:
            break
        rows = list(found_rows)
        wanted = {r.job_id for r in rows}
        earliest = min(as_utc(r.ended_at) for r in rows)
        scope = history_namespaces(namespace, across, None)
        runs = load_runs(session, earliest, group=group, namespaces=scope)
        replay = [r for r in runs if r.job_id in wanted]
        series = load_series(
            session, [r.peak_node_id for r in replay if r.peak_node_id is not None]
        )
        for position, run in enumerate(runs):
            if run.job_id not in wanted:
                continue
            history = [r.run for r in runs[:position]]
            found = job_savings(run, history, series.get(run.peak_node_id), loop, harness, target)
            values = {column.key: getattr(found, field) for field, column in STORED.items()}
            _store(session, run.job_id, now, values)
            wanted.discard(run.job_id)
            done += 1
        # Summaries without a main role (no nodes) have nothing to replay: marked done.
        for job_id in wanted:
            _store(session, job_id, now, {})
            done += 1
    if done:
        log.info("stored the savings replay of %d jobs", done)
    return done


def store_pending_savings(
    factory: sessionmaker[Session], settings: Settings, registry: OptimizerRegistry
) -> int:
    """``store_savings`` until nothing is left, one transaction per pass; how many."""
    total = 0
    while True:
        with factory() as session:
            done = store_savings(session, registry, settings)
            session.commit()
        total += done
        if not done:
            return total


def _store(session: Session, job_id: int, now, values: dict) -> None:
    session.execute(
        update(JobSummaryRow)
        .where(JobSummaryRow.job_id == job_id)
        .values(savings_computed_at=now, **values)
    )
