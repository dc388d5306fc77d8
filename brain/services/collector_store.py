"""What the Prometheus collector (``collectors/``) reads from and writes to the store.

The collector decides *what* to ask Prometheus; these functions are its only way into
the database: which jobs to collect, where each job's stored load ends, and writing a
job's scraped points and OOM kills through the same ingest path as pushed samples.
The caller owns the transaction (the collector writes each job in one of its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from brain.db.chunks import in_list_chunks
from brain.db.models import JobRow, NodeSampleRow
from brain.domain import JobStatus
from brain.services.events import EventInput, record_events
from brain.services.nodes import NodeRef, ensure_nodes
from brain.services.samples import NodePoint, ingest
from brain.services.silent_nodes import settle_silent_nodes

# Points per ingest statement: bounds the size of one INSERT of a long backfill.
INGEST_CHUNK = 10_000


@dataclass(frozen=True, slots=True)
class CollectableJob:
    """What the collector needs of a registered job (a plain snapshot, no ORM state)."""

    id: int
    uid: str
    name: str
    namespace: str | None
    # When its load can begin: started_at, else created_at.
    start: datetime


@dataclass(frozen=True)
class CollectionJobs:
    """``known``: every job a series may belong to (running ones, plus the selected);
    ``targets``: the jobs whose load this cycle collects; ``missing``: selected uids that
    name no job."""

    known: list[CollectableJob]
    targets: list[CollectableJob]
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CollectedLoad:
    """One job's scraped points and OOM kills; ``event_nodes`` are the killed nodes (they
    are created, like nodes of pushed samples, when the job master never registered them)."""

    points: list[NodePoint] = field(default_factory=list)
    events: list[EventInput] = field(default_factory=list)
    event_nodes: list[NodeRef] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.points and not self.events


@dataclass(frozen=True)
class CollectedResult:
    stored: int
    duplicates: int
    events: int
    # The job had finished and was summarized, and what was stored now (a late OOM kill
    # or late points) made its summary stale: the collector summarizes it again.
    summary_stale: bool = False


_COLUMNS = (
    JobRow.id,
    JobRow.uid,
    JobRow.name,
    JobRow.namespace,
    JobRow.started_at,
    JobRow.created_at,
)


def jobs_to_collect(
    session: Session,
    job_uids: Sequence[str] | None = None,
    *,
    job_ids: Iterable[int] = (),
    only_ids: bool = False,
) -> CollectionJobs:
    """Running jobs, or only ``job_uids`` (whatever their status) when given. ``job_ids``
    (discovered in this cycle, whatever their status) are collected too; with
    ``only_ids`` (a backfill) they alone."""
    ids = sorted(set(job_ids))
    chosen = (
        [_collectable(row) for row in session.execute(select(*_COLUMNS).where(JobRow.id.in_(ids)))]
        if ids
        else []
    )
    if only_ids:
        return CollectionJobs(known=chosen, targets=chosen)
    running = session.execute(select(*_COLUMNS).where(JobRow.status == JobStatus.running.value))
    known = {row.id: _collectable(row) for row in running}
    known.update((job.id, job) for job in chosen)
    if not job_uids:
        return CollectionJobs(known=list(known.values()), targets=list(known.values()))
    selected = [
        _collectable(row)
        for uids in in_list_chunks(job_uids)
        for row in session.execute(select(*_COLUMNS).where(JobRow.uid.in_(uids)))
    ]
    known.update((job.id, job) for job in selected)
    found = {job.uid for job in selected}
    return CollectionJobs(
        known=list(known.values()),
        targets=selected,
        missing=[uid for uid in job_uids if uid not in found],
    )


def any_discovered_job(session: Session) -> bool:
    """Whether discovery has stored a job yet (a first start backfills until it has)."""
    return session.scalar(select(JobRow.id).where(JobRow.discovered).limit(1)) is not None


def last_sample_times(session: Session, job_ids: Iterable[int]) -> dict[int, datetime | None]:
    """The newest stored node-sample time of each job (``None``: nothing stored yet)."""
    latest = (
        select(func.max(NodeSampleRow.ts))
        .where(NodeSampleRow.job_id == JobRow.id)
        .correlate(JobRow)
        .scalar_subquery()
    )
    times: dict[int, datetime | None] = {}
    for ids in in_list_chunks(job_ids):
        times.update(session.execute(select(JobRow.id, latest).where(JobRow.id.in_(ids))).all())
    return times


def store_collected(
    session: Session, job_id: int, load: CollectedLoad, silent_after_s: float
) -> CollectedResult | None:
    """Store a job's scraped load: points insert-or-ignore on (node, ts), events once on
    (job, kind, ts, node); then the job's learned nodes silent for ``silent_after_s`` are
    stopped (``silent_nodes``). ``None`` when the job was deleted meanwhile."""
    job = session.get(JobRow, job_id)
    if job is None:
        return None
    stored = duplicates = recorded = 0
    summarized = job.summarized_at is not None
    for chunk in range(0, len(load.points), INGEST_CHUNK):
        result = ingest(session, job, load.points[chunk : chunk + INGEST_CHUNK], [])
        stored += result.accepted
        duplicates += result.duplicates
    if load.events:
        ensure_nodes(session, job, load.event_nodes)
        recorded = record_events(session, job, load.events).accepted
    if load.points:
        settle_silent_nodes(session, job, silent_after_s)
    return CollectedResult(
        stored=stored,
        duplicates=duplicates,
        events=recorded,
        summary_stale=summarized and job.summarized_at is None,
    )


def _collectable(row) -> CollectableJob:
    return CollectableJob(
        id=row.id,
        uid=row.uid,
        name=row.name,
        namespace=row.namespace,
        start=row.started_at or row.created_at,
    )
