"""One decision at a time per job, on PostgreSQL and on SQLite, until the transaction ends.

Decisions that read and then write must not interleave for one job: optimize (supersede
the pending plans, store the new one), answering an OOM event once, moving a plan's
status. PostgreSQL: a row lock on the job, ``FOR NO KEY UPDATE`` so that inserting the
job's samples (which takes only a key-share lock on it) goes on meanwhile. SQLite has
no row locks: a no-op UPDATE of the job as the transaction's first write takes the
database's write lock at once, as ``BEGIN IMMEDIATE`` would, before any read the
decision rests on; other processes on the same file wait for it too.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from brain.db.models import JobRow


def lock_job(session: Session, job: JobRow) -> None:
    """Wait for the job's other deciders, then reload ``job`` as they left it."""
    if session.get_bind().dialect.name == "sqlite":
        session.execute(
            update(JobRow)
            .where(JobRow.id == job.id)
            .values(id=JobRow.id)
            .execution_options(synchronize_session=False)
        )
        session.refresh(job)
    else:
        session.refresh(job, with_for_update={"key_share": True})
