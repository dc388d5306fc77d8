"""Registering the jobs discovery found in the cluster's metrics.

A discovered job is the run of a Kubernetes object: its namespace and name, and a start.
It is stored like a registered job (``discovered`` set, its ``kind`` kept) so that every
portrait, waste figure, suggestion and savings report covers it.

One job, whoever speaks first:

- a job registered by a job master (``PUT /api/v1/jobs``) in the same namespace, named
  like the object or with the object's name as uid, and not finished before the run
  began, *is* the discovered job: discovery changes nothing of it and only ties the pods'
  load to it;
- a registration of a job that discovery stored first takes that job over
  (``brain.services.jobs.upsert_job``): same row, its samples kept, the registration's
  description from then on.

Observations are merged, so seeing a job again (the next cycle, a second backfill)
changes nothing unless the job changed: the earliest start, the most replicas per role,
the newest status. A finished job is final.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from brain.db.chunks import MAX_PARAMETERS, RESERVED_PARAMETERS, chunked
from brain.db.models import JobRow, NodeSampleRow
from brain.discovered_job import DiscoveredJob
from brain.domain import JobStatus, RoleSpec, Strategy, as_utc, utcnow

GONE_REASON = "pods gone without a final phase"
# Uids tried for a run whose name an earlier run of the same namespace already uses.
MAX_UID_ATTEMPTS = 20
# Jobs one lookup takes: it binds each job's namespace once and its name twice at most.
JOBS_PER_LOOKUP = (MAX_PARAMETERS - RESERVED_PARAMETERS) // 3


@dataclass(frozen=True)
class RecordedJob:
    """Where a discovered job's load goes (``job_id``) and what recording it did:
    ``registered`` when a job master's registration holds it (left unchanged)."""

    job_id: int
    uid: str
    registered: bool
    created: bool
    changed: bool
    finished: bool


def same_run(row: JobRow, started_at: datetime | None) -> bool:
    """Whether a stored job with the object's name is this run: not finished before it
    began (a name reused for a later run is another job)."""
    if started_at is None or row.finished_at is None:
        return True
    return as_utc(started_at) <= as_utc(row.finished_at)


def _pick_run(rows: Iterable[JobRow], started_at) -> JobRow | None:
    runs = [row for row in rows if same_run(row, started_at)]
    runs.sort(key=lambda row: (row.discovered, -row.id))
    return runs[0] if runs else None


def discovered_run(
    session: Session, namespace: str | None, name: str, started_at: datetime | None
) -> JobRow | None:
    """The job discovery stored for this run of ``namespace``/``name``, if any (a
    registration naming no namespace cannot be told apart from other namespaces')."""
    if namespace is None:
        return None
    rows = session.scalars(
        select(JobRow)
        .where(JobRow.namespace == namespace, JobRow.name == name, JobRow.discovered)
        .order_by(JobRow.id.desc())
    ).all()
    return next((row for row in rows if same_run(row, started_at)), None)


def record_discovered(session: Session, jobs: Sequence[DiscoveredJob]) -> list[RecordedJob]:
    """Create or merge each discovered job, in order; the caller owns the transaction.

    The stored jobs each may be are read in one query for all (a cycle sees every
    running job again): not one per job."""
    candidates = _candidates(session, [(job.namespace, job.name) for job in jobs])
    recorded = []
    for job in jobs:
        rows = candidates.get((job.namespace, job.name), {}).values()
        row = _pick_run(rows, job.started_at)
        if row is not None and not row.discovered:
            recorded.append(
                RecordedJob(row.id, row.uid, True, False, False, JobStatus(row.status).finished)
            )
            continue
        if row is None:
            row = _create(session, job)
            # A later job of the same list with this name or uid finds it, as it would
            # in the database.
            for key in ((row.namespace, row.name), (row.namespace, row.uid)):
                candidates.setdefault(key, {})[row.id] = row
            recorded.append(
                RecordedJob(row.id, row.uid, False, True, True, JobStatus(row.status).finished)
            )
            continue
        changed = _merge(row, job)
        if changed:
            row.updated_at = utcnow()
            session.flush()
        recorded.append(
            RecordedJob(row.id, row.uid, False, False, changed, JobStatus(row.status).finished)
        )
    return recorded


def _candidates(
    session: Session, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], dict[int, JobRow]]:
    """The stored jobs of each (namespace, name), named so or with it as uid, by id."""
    found: dict[tuple[str, str], dict[int, JobRow]] = {}
    for chunk in chunked(sorted(set(keys)), JOBS_PER_LOOKUP):
        wanted = set(chunk)
        names = sorted({name for _, name in wanted})
        rows = session.scalars(
            select(JobRow).where(
                JobRow.namespace.in_(sorted({namespace for namespace, _ in wanted})),
                or_(JobRow.name.in_(names), JobRow.uid.in_(names)),
            )
        )
        for row in rows:
            for key in {(row.namespace, row.name), (row.namespace, row.uid)}:
                if key in wanted:
                    found.setdefault(key, {})[row.id] = row
    return found


def _create(session: Session, job: DiscoveredJob) -> JobRow:
    now = utcnow()
    row = JobRow(
        uid=_free_uid(session, job),
        name=job.name,
        user=job.user,
        group_key=job.group_key,
        strategy=_strategy(job.roles).value,
        namespace=job.namespace,
        kind=job.kind,
        discovered=True,
        roles=dict(job.roles),
        role_bounds={},
        status=job.status.value,
        exit_reason=job.exit_reason,
        created_at=job.started_at or job.seen_at,
        updated_at=now,
        started_at=job.started_at,
        finished_at=job.finished_at,
        # Found by Brain in the cluster's own metrics, in the namespace Kubernetes names:
        # vouched for, as a registration by a token for every namespace is.
        vouched_at=now,
    )
    session.add(row)
    session.flush()
    return row


def _free_uid(session: Session, job: DiscoveredJob) -> str:
    """The object's name; for a later run of a reused name, the name and its start."""
    stamp = as_utc(job.started_at or job.seen_at).strftime("%Y%m%d%H%M%S")
    candidates = [job.name, f"{job.name}-{stamp}"]
    candidates += [f"{job.name}-{stamp}-{n}" for n in range(2, MAX_UID_ATTEMPTS)]
    for uid in candidates:
        taken = session.scalar(
            select(JobRow.id).where(JobRow.uid == uid, JobRow.namespace == job.namespace)
        )
        if taken is None:
            return uid
    raise RuntimeError(f"no free uid for {job.namespace}/{job.name} after {len(candidates)}")


def _merge(row: JobRow, job: DiscoveredJob) -> bool:
    if JobStatus(row.status).finished:
        return False  # final: an older window seen again says nothing new
    before = _described(row)
    starts = [t for t in (row.started_at, job.started_at) if t is not None]
    row.started_at = min(starts, key=as_utc) if starts else None
    if row.started_at is not None and as_utc(row.started_at) < as_utc(row.created_at):
        row.created_at = row.started_at
    roles = dict(row.roles or {})
    for role, spec in job.roles.items():
        old = roles.get(role)
        if old is None:
            roles[role] = spec
            continue
        roles[role] = RoleSpec(
            count=max(old.count or 0, spec.count or 0),
            cpu=spec.cpu if spec.cpu is not None else old.cpu,
            memory_mib=spec.memory_mib if spec.memory_mib is not None else old.memory_mib,
            gpu=spec.gpu if spec.gpu is not None else old.gpu,
            cpu_limit=spec.cpu_limit if spec.cpu_limit is not None else old.cpu_limit,
        )
    row.roles = roles
    row.strategy = _strategy(roles).value
    row.kind = job.kind
    row.user = job.user
    row.group_key = job.group_key
    row.status = job.status.value
    row.exit_reason = job.exit_reason
    row.finished_at = job.finished_at
    return _described(row) != before


def _described(row: JobRow) -> tuple:
    return (
        row.started_at and as_utc(row.started_at),
        row.created_at and as_utc(row.created_at),
        dict(row.roles or {}),
        row.strategy,
        row.kind,
        row.user,
        row.group_key,
        row.status,
        row.exit_reason,
        row.finished_at and as_utc(row.finished_at),
    )


def _strategy(roles: dict[str, RoleSpec]) -> Strategy:
    return Strategy.ps if "ps" in roles else Strategy.allreduce


def stop_vanished(session: Session, seen_ids: set[int], window_start: datetime) -> list[int]:
    """Discovered jobs still running whose pods did not show at all in a window that
    began after their last sign of life (their newest stored point, else their start):
    deleted while running, so stopped at that last sign. Returns their ids."""
    last_point = (
        select(func.max(NodeSampleRow.ts))
        .where(NodeSampleRow.job_id == JobRow.id)
        .correlate(JobRow)
        .scalar_subquery()
    )
    rows = session.execute(
        select(JobRow, last_point).where(
            JobRow.discovered,
            JobRow.status.in_([JobStatus.running.value, JobStatus.pending.value]),
        )
    ).all()
    stopped = []
    for row, last in rows:
        if row.id in seen_ids:
            continue
        alive = last or row.started_at or row.created_at
        if as_utc(alive) > as_utc(window_start):
            continue  # seen after this window began (a later cycle): not evidence
        row.status = JobStatus.stopped.value
        row.exit_reason = GONE_REASON
        row.finished_at = max(alive, row.started_at or alive, key=as_utc)
        row.updated_at = utcnow()
        stopped.append(row.id)
    session.flush()
    return stopped
