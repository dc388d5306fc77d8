"""``brain summarize``: backfill job summaries, or refresh those of running jobs."""

from __future__ import annotations

import logging
import sys

from brain.config import Settings
from brain.db.engine import make_engine, make_session_factory
from brain.summaries.store import job_ids_of_uid, jobs_to_summarize, summarize_job_ids

log = logging.getLogger(__name__)


def add_parser(commands) -> None:
    """Add the ``summarize`` subcommand to the ``brain`` CLI's subparsers."""
    parser = commands.add_parser(
        "summarize",
        help="compute job summaries (backfill finished jobs, refresh running ones)",
        description="Compute and store job summaries, which portraits and history read. "
        "Without options: every finished job without a final summary. A summary computed "
        "from more samples than are left (raw samples aged out) is kept.",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--all", action="store_true", help="re-summarize every finished job (replaces)"
    )
    which.add_argument(
        "--job", metavar="UID", help="summarize this job only (of every namespace holding the uid)"
    )
    which.add_argument(
        "--running", action="store_true", help="refresh the summaries of running jobs"
    )
    parser.set_defaults(handler=_summarize, needs_database=True)


def _summarize(args) -> int:
    engine = make_engine(Settings().database_url)
    try:
        factory = make_session_factory(engine)
        with factory() as session:
            if args.job:
                job_ids = job_ids_of_uid(session, args.job)
            else:
                job_ids = jobs_to_summarize(session, everything=args.all, running=args.running)
        done = summarize_job_ids(factory, job_ids)
    finally:
        engine.dispose()
    if done < len(job_ids) or (args.job and not job_ids):
        print(f"summarized {done} of {len(job_ids)} jobs; see the log", file=sys.stderr)
        return 1
    print(f"summarized {done} jobs")
    return 0
