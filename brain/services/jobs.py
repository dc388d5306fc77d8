"""Register, update, read and list jobs."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel
from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from brain.bounds import INT32_MAX
from brain.db.engine import ReadSession
from brain.db.models import JobRow
from brain.domain import (
    JobStatus,
    RoleBounds,
    RoleSpec,
    Strategy,
    as_utc,
    default_group_key,
    utcnow,
)
from brain.errors import InvalidInput, job_not_found
from brain.job_ref import JobRef, one_job
from brain.services.discovered_jobs import discovered_run


@dataclass
class JobInput:
    """What a job master says about a job when it registers it."""

    name: str
    user: str
    strategy: Strategy = Strategy.ps
    dataset: str | None = None
    group_key: str | None = None
    framework: str | None = None
    namespace: str | None = None
    cluster: str | None = None
    gpu_type: str | None = None
    limit_cpu: float | None = None
    limit_memory_mib: float | None = None
    limit_gpu: float | None = None
    roles: dict[str, RoleSpec] = field(default_factory=dict)
    role_bounds: dict[str, RoleBounds] = field(default_factory=dict)
    total_steps: int | None = None
    status: JobStatus = JobStatus.pending
    exit_reason: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass
class JobFilters:
    user: str | None = None
    status: JobStatus | None = None
    name: str | None = None
    dataset: str | None = None
    group_key: str | None = None
    # Only jobs in these namespaces (a namespace-restricted token); None: every job.
    namespaces: frozenset[str] | None = None


def get_job(session: ReadSession, ref: JobRef | str) -> JobRow:
    """The job ``ref`` names (a bare uid: the one job with that uid, in any namespace):
    404 when there is none, 409 naming ``namespace`` when jobs of several namespaces
    the caller may read hold the uid."""
    job = find_job(session, ref)
    if job is None:
        raise job_not_found(JobRef.of(ref).uid)
    return job


def find_job(session: ReadSession, ref: JobRef | str) -> JobRow | None:
    """As ``get_job``, None where that answers 404."""
    ref = JobRef.of(ref)
    return one_job(ref.uid, list(session.scalars(_jobs_named(ref))))


def jobs_with_uid(session: Session, uid: str) -> list[JobRow]:
    """Every job with this uid, whatever its namespace, oldest first."""
    return list(session.scalars(_jobs_named(JobRef(uid))))


def _jobs_named(ref: JobRef) -> Select:
    query = select(JobRow).where(JobRow.uid == ref.uid)
    if ref.named:
        query = query.where(_in_namespace(ref.namespace))
    if ref.readable is not None:
        query = query.where(JobRow.namespace.in_(sorted(ref.readable)))
    return query.order_by(JobRow.id)


def _in_namespace(namespace: str | None) -> ColumnElement[bool]:
    return JobRow.namespace.is_(None) if namespace is None else JobRow.namespace == namespace


def upsert_job(
    session: Session, uid: str, data: JobInput, every_namespace: bool = False
) -> tuple[JobRow, bool]:
    """Create or replace the description of the job ``uid`` of ``data.namespace``;
    returns the job and whether it was created.

    ``every_namespace`` (a caller that may write every namespace): the job is vouched
    for (``JobRow.vouched_at``), and a job of this uid registered without a namespace
    (e.g. first seen from its DLRover master, which names none) takes
    ``data.namespace`` instead of a second job being created."""
    _check_times(data.started_at, data.finished_at)
    now = utcnow()
    job = find_job(session, JobRef.exact(uid, data.namespace))
    if job is None and every_namespace and data.namespace is not None:
        job = find_job(session, JobRef.exact(uid, None))
    if job is None:
        # Discovery saw this run first: the registration takes that job over.
        job = discovered_run(session, data.namespace, data.name, data.started_at)
        if job is not None:
            job.uid = uid
    if job is None:
        job = _create_job(session, uid, data, now, vouched=every_namespace)
        if job is not None:
            return job, True
        # Another request created the same job first: this one becomes an update.
        job = get_job(session, JobRef.exact(uid, data.namespace))
    if data.created_at is not None:
        job.created_at = data.created_at
    _describe(job, data, now)
    if every_namespace:
        vouch(job, now)
    session.flush()
    return job, False


def vouch(job: JobRow, now: datetime) -> None:
    """Mark ``job`` as registered or reached by name by a caller that may write every
    namespace (see ``one_job``); the first time counts."""
    if job.vouched_at is None:
        job.vouched_at = now


def _create_job(
    session: Session, uid: str, data: JobInput, now: datetime, vouched: bool
) -> JobRow | None:
    """Insert the job in a savepoint; None when the uid turned out to be taken, which
    undoes only this insert and keeps the rest of the caller's transaction."""
    try:
        with session.begin_nested():
            job = JobRow(
                uid=uid, created_at=data.created_at or now, vouched_at=now if vouched else None
            )
            _describe(job, data, now)
            session.add(job)
    except IntegrityError:
        if find_job(session, JobRef.exact(uid, data.namespace)) is None:
            raise  # not the uid race: a real error
        return None
    return job


def _describe(job: JobRow, data: JobInput, now: datetime) -> None:
    job.name = data.name
    job.user = data.user
    job.dataset = data.dataset
    job.group_key = data.group_key or default_group_key(data.user, data.name)
    job.framework = data.framework
    job.strategy = Strategy(data.strategy).value
    job.namespace = data.namespace
    job.cluster = data.cluster
    job.gpu_type = data.gpu_type
    job.limit_cpu = data.limit_cpu
    job.limit_memory_mib = data.limit_memory_mib
    job.limit_gpu = data.limit_gpu
    job.roles = data.roles
    job.role_bounds = data.role_bounds
    job.total_steps = data.total_steps
    job.status = JobStatus(data.status).value
    job.exit_reason = data.exit_reason
    job.started_at = data.started_at
    job.finished_at = data.finished_at
    job.discovered = False  # registered: discovery no longer describes it
    job.updated_at = now


class JobChanges(BaseModel):
    """What a PATCH may change. Only the fields given (``model_fields_set``) apply, so an
    explicit ``None`` clears the exit reason or a time, and an omitted one keeps it."""

    status: JobStatus | None = None
    exit_reason: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


def patch_job(session: Session, ref: JobRef | str, changes: JobChanges) -> JobRow:
    """Change status, exit reason and times; other fields go through ``upsert_job``."""
    job = get_job(session, ref)
    given = changes.model_fields_set
    if "status" in given:
        if changes.status is None:
            raise InvalidInput("status cannot be null", field="status")
        job.status = changes.status.value
    if "exit_reason" in given:
        job.exit_reason = changes.exit_reason
    if "started_at" in given:
        job.started_at = changes.started_at
    if "finished_at" in given:
        job.finished_at = changes.finished_at
    _check_times(job.started_at, job.finished_at)
    job.updated_at = utcnow()
    session.flush()
    return job


def _check_times(started_at: datetime | None, finished_at: datetime | None) -> None:
    if started_at and finished_at and as_utc(finished_at) < as_utc(started_at):
        raise InvalidInput("finished_at is before started_at", field="finished_at")


def list_jobs(
    session: ReadSession, filters: JobFilters, limit: int, cursor: str | None
) -> tuple[list[JobRow], str | None]:
    """Jobs newest first, ``limit`` at a time; pass the returned cursor for the next page."""
    query = select(JobRow)
    if filters.user is not None:
        query = query.where(JobRow.user == filters.user)
    if filters.status is not None:
        query = query.where(JobRow.status == JobStatus(filters.status).value)
    if filters.name is not None:
        query = query.where(JobRow.name == filters.name)
    if filters.dataset is not None:
        query = query.where(JobRow.dataset == filters.dataset)
    if filters.group_key is not None:
        query = query.where(JobRow.group_key == filters.group_key)
    if filters.namespaces is not None:
        query = query.where(JobRow.namespace.in_(sorted(filters.namespaces)))
    if cursor:
        created_at, job_id = decode_cursor(cursor)
        query = query.where(
            or_(
                JobRow.created_at < created_at,
                and_(JobRow.created_at == created_at, JobRow.id < job_id),
            )
        )
    query = query.order_by(JobRow.created_at.desc(), JobRow.id.desc()).limit(limit + 1)
    jobs = list(session.scalars(query))
    if len(jobs) <= limit:
        return jobs, None
    jobs = jobs[:limit]
    return jobs, encode_cursor(jobs[-1].created_at, jobs[-1].id)


def encode_cursor(created_at: datetime, job_id: int) -> str:
    raw = f"{as_utc(created_at).isoformat()}|{job_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, job_id = base64.urlsafe_b64decode(padded).decode().split("|")
        created_at, row_id = as_utc(datetime.fromisoformat(created)), int(job_id)
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("cursor is not one this service returned", field="cursor") from exc
    if not 0 < row_id <= INT32_MAX:
        raise InvalidInput("cursor is not one this service returned", field="cursor")
    return created_at, row_id
