"""What a job master reports about its job besides samples: that it runs, its strategy,
hyper-parameters, model features, cumulative custom data, OOM-killed nodes and how the
job ended. Protocol-neutral; DLRover's gRPC ``persist_metrics`` and ``optimize`` use it.

Masters repeat themselves (every worker sends the same hyper-parameters; custom data is
re-sent whole on every rendezvous poll), so every write here happens only on change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from brain.db.models import EventRow, JobRow, MasterReportRow
from brain.domain import EventKind, JobStatus, RoleSpec, Strategy, default_group_key, utcnow
from brain.errors import InvalidInput
from brain.job_ref import one_job
from brain.services import events, nodes
from brain.services.jobs import jobs_with_uid, vouch

UNKNOWN_USER = "unknown"


@dataclass(frozen=True)
class JobExit:
    """How a master said its job ended."""

    succeeded: bool
    reason: str
    # The job died of memory (e.g. DLRover's WorkerOOM / PSOOM): also an ``oom`` event.
    oom: bool = False


def job_of_master(session: Session, uid: str, namespace: str | None) -> JobRow | None:
    """The job a master means. Masters name their job by uid (DLRover's: the ElasticJob's
    Kubernetes UID) and not always by namespace, while uids are unique per namespace
    only. A master may write every namespace, so the job it reaches by the namespace it
    names is vouched for (``JobRow.vouched_at``), and afterwards its calls that name no
    namespace reach that job even if another namespace registers the uid too.

    - ``namespace`` named and a job of it holds the uid: that job.
    - ``namespace`` named and none does: the job without a namespace, or one vouched
      for, if only one (the name is a hint: 0.6.1 masters may send something else);
      never a job another namespace registered on its own, which would let that
      namespace read the master's reports. None: the caller creates the job there.
    - none named: the only job with the uid, else the only one vouched for.

    None when no job fits; several and none to prefer: a Conflict (no job is guessed)."""
    found = jobs_with_uid(session, uid)
    if namespace is not None:
        named = [job for job in found if job.namespace == namespace]
        if named:
            vouch(named[0], utcnow())
            return named[0]
        found = [job for job in found if job.namespace is None or job.vouched_at is not None]
    return one_job(uid, found)


def ensure_running_job(
    session: Session, uid: str, user: str | None, namespace: str | None = None
) -> JobRow:
    """The job ``uid`` (see ``job_of_master``), created on the first report of a master
    Brain was never told about.

    Such a job is named after its uid (the name can be set later with PUT), belongs to
    ``user`` if the master gives one, and to ``namespace`` if it names one. A pending
    job whose master reports is running.
    """
    job = job_of_master(session, uid, namespace)
    now = utcnow()
    if job is None:
        owner = user or UNKNOWN_USER
        job = JobRow(
            uid=uid,
            name=uid,
            user=owner,
            namespace=namespace,
            group_key=default_group_key(owner, uid),
            strategy=Strategy.ps.value,
            roles={},
            status=JobStatus.running.value,
            created_at=now,
            updated_at=now,
            started_at=now,
            vouched_at=now,
        )
        try:
            with session.begin_nested():
                session.add(job)
        except IntegrityError:
            # Another call for the same new job (a report and an optimize) created it first.
            return ensure_running_job(session, uid, user, namespace)
    elif job.status == JobStatus.pending.value:
        job.status = JobStatus.running.value
        job.started_at = job.started_at or now
        job.updated_at = now
        session.flush()
    return job


def adopt_requested_roles(session: Session, job: JobRow, roles: dict[str, RoleSpec]) -> None:
    """The job's request as learned without a registration (DLRover: its ElasticJob)."""
    job.roles = roles
    job.updated_at = utcnow()
    session.flush()


def set_strategy(session: Session, job: JobRow, strategy: Strategy) -> bool:
    if job.strategy == strategy.value:
        return False
    job.strategy = strategy.value
    job.updated_at = utcnow()
    session.flush()
    return True


def record_report(
    session: Session,
    job: JobRow,
    kind: str,
    body: dict[str, Any],
    cumulative: bool = False,
    max_bytes: int | None = None,
) -> bool:
    """Keep the latest ``body`` of this kind of report; ``cumulative`` bodies are merged
    into what was kept (a master re-sending its whole dict adds only its new keys).
    Returns whether anything was written. A body that would exceed ``max_bytes`` as JSON
    is refused (``InvalidInput``), keeping what was kept: a cumulative report must not
    grow a row without end, each rewrite costing its whole size."""
    report = session.get(MasterReportRow, (job.id, kind))
    merged = {**report.body, **body} if report is not None and cumulative else body
    if report is not None and report.body == merged:
        return False
    if max_bytes is not None:
        size = len(json.dumps(merged, separators=(",", ":")).encode())
        if size > max_bytes:
            raise InvalidInput(
                f"{kind} would hold {size} bytes, over the {max_bytes} kept per job "
                "(BRAIN_GRPC_REPORT_MAX_BYTES)",
                field=kind,
            )
    if report is None:
        session.add(MasterReportRow(job_id=job.id, kind=kind, body=merged, updated_at=utcnow()))
    else:
        report.body = merged
        report.updated_at = utcnow()
    session.flush()
    return True


def reports(session: Session, job: JobRow) -> dict[str, dict[str, Any]]:
    """Every kind of report kept for the job, by kind."""
    rows = session.scalars(select(MasterReportRow).where(MasterReportRow.job_id == job.id))
    return {row.kind: row.body for row in rows}


def record_exit(session: Session, job: JobRow, exit: JobExit) -> bool:
    """Finish the job as the master says; returns whether it changed (then summarize it)."""
    status = JobStatus.succeeded if exit.succeeded else JobStatus.failed
    reason = None if exit.succeeded else exit.reason
    if job.status == status.value and job.exit_reason == reason:
        return False
    now = utcnow()
    job.status = status.value
    job.exit_reason = reason
    job.finished_at = job.finished_at or now
    job.updated_at = now
    if exit.oom:
        events.record_events(
            session, job, [events.EventInput(ts=now, kind=EventKind.oom, detail=exit.reason)]
        )
    session.flush()
    return True


def record_node_oom(session: Session, job: JobRow, node: nodes.NodeRef) -> bool:
    """One ``oom`` event per OOM-killed node, however often the master asks about it.

    Job masters such as DLRover give every relaunched pod a new name, so a node name is
    killed by OOM at most once; unknown nodes are created with their role's request.
    Returns whether the job's summary is stale (a finished job's kill, recorded late).
    """
    nodes.ensure_nodes(session, job, [node])
    seen = session.scalar(
        select(EventRow.id).where(
            EventRow.job_id == job.id,
            EventRow.kind == EventKind.oom.value,
            EventRow.node_name == node.name,
        )
    )
    if seen is not None:
        return False
    recorded = events.record_events(
        session, job, [events.EventInput(ts=utcnow(), kind=EventKind.oom, node=node.name)]
    )
    return recorded.summary_stale
