"""``brain jobs delete``: delete a job and everything stored about it in
BRAIN_DATABASE_URL (what ``DELETE /api/v1/jobs/{uid}`` does, for an operator at the
database)."""

from __future__ import annotations

import sys

from brain.config import Settings
from brain.db.engine import make_engine, make_session_factory
from brain.errors import BrainError
from brain.job_ref import JobRef
from brain.services.job_deletion import delete_job


def add_parser(commands) -> None:
    jobs = commands.add_parser("jobs", help="delete a job with everything stored about it")
    actions = jobs.add_subparsers(title="jobs commands", metavar="JOBS_COMMAND", required=True)
    jobs.set_defaults(needs_database=True)
    delete = actions.add_parser(
        "delete",
        help="delete a job with its nodes, samples, plans, events and summaries",
        description="Delete a job with its nodes, samples, plans, events and summaries, in "
        "one transaction. When jobs of several namespaces have the uid, name one with "
        "--namespace (an empty one: the job registered without a namespace).",
    )
    delete.add_argument("uid")
    delete.add_argument("--namespace", help="the job's namespace ('' for none)")
    delete.set_defaults(handler=_delete)


def _delete(args) -> int:
    ref = (
        JobRef(args.uid)
        if args.namespace is None
        else JobRef.exact(args.uid, args.namespace or None)
    )
    engine = make_engine(Settings().database_url)
    try:
        with make_session_factory(engine)() as session:
            deleted = delete_job(session, ref)
            session.commit()
    except BrainError as exc:
        message = exc.message.replace("?namespace=", "--namespace")
        print(f"brain jobs delete: {message}", file=sys.stderr)
        return 1
    finally:
        engine.dispose()
    namespace = "no namespace" if deleted.namespace is None else f"namespace {deleted.namespace}"
    rows = ", ".join(f"{count} {name}" for name, count in deleted.rows.items() if count)
    print(f"deleted job {deleted.uid!r} of {namespace}" + (f" with {rows}" if rows else ""))
    return 0
