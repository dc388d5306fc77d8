"""Job and node events (started, oom, evicted, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from brain.db.chunks import in_list_chunks
from brain.db.engine import ReadSession
from brain.db.models import EventRow, JobRow, NodeRow
from brain.domain import EventKind, JobStatus
from brain.errors import NotFound


@dataclass(frozen=True)
class EventInput:
    ts: datetime
    kind: EventKind
    node: str | None = None
    detail: str | None = None


# The kinds a job's summary counts (oom_count, failure_count): one recorded after the
# summary makes it stale.
SUMMARIZED_KINDS = frozenset({EventKind.oom.value, EventKind.failed.value})


@dataclass(frozen=True)
class EventsResult:
    accepted: int
    duplicates: int
    # Accepted events of SUMMARIZED_KINDS.
    summarized_kinds: int = 0
    # The job is finished and an accepted event changes its summary's counts: summarize
    # it again (the summary refresher would, within BRAIN_SUMMARY_INTERVAL_S).
    summary_stale: bool = False


def record_events(session: Session, job: JobRow, events: Sequence[EventInput]) -> EventsResult:
    """Store events once each: (job, kind, ts, node) identifies an event.

    Every way an event comes in (REST, a DLRover master, the Prometheus collector) goes
    through here, so here an OOM kill or failure of a finished job (a late report: the
    master's exit came first, or Prometheus saw the kill a scrape later) marks its
    summary stale, as samples that arrive late do: ``job.summarized_at`` is cleared, so
    the summary refresher recomputes it even if the caller's own prompt summary is lost,
    and retention keeps the job's raw samples until then."""
    if not events:
        return EventsResult(0, 0)
    node_ids: dict[str, int] = {}
    for names in in_list_chunks({e.node for e in events if e.node}):
        node_ids.update(
            session.execute(
                select(NodeRow.name, NodeRow.id).where(
                    NodeRow.job_id == job.id, NodeRow.name.in_(names)
                )
            ).all()
        )
    for position, event in enumerate(events):
        if event.node and event.node not in node_ids:
            raise NotFound(f"job has no node {event.node!r}", field=f"{position}.node")
    rows = [
        {
            "job_id": job.id,
            "node_id": node_ids.get(e.node) if e.node else None,
            "node_name": e.node or "",
            "ts": e.ts,
            "kind": EventKind(e.kind).value,
            "detail": e.detail,
        }
        for e in events
    ]
    insert = pg_insert if session.bind.dialect.name == "postgresql" else sqlite_insert
    stmt = insert(EventRow).on_conflict_do_nothing().returning(EventRow.kind)
    # One executemany: SQLAlchemy sends it as multi-row INSERTs under the databases'
    # parameter limits; an event stored already returns no row.
    kinds = session.scalars(stmt, rows).all()
    counted = sum(1 for kind in kinds if kind in SUMMARIZED_KINDS)
    stale = counted > 0 and JobStatus(job.status).finished
    if stale:
        job.summarized_at = None
    return EventsResult(
        len(kinds), len(events) - len(kinds), summarized_kinds=counted, summary_stale=stale
    )


def list_events(
    session: ReadSession,
    job: JobRow,
    kind: EventKind | None = None,
    node: str | None = None,
    limit: int = 1000,
) -> list[EventRow]:
    stmt = select(EventRow).where(EventRow.job_id == job.id)
    if kind is not None:
        stmt = stmt.where(EventRow.kind == EventKind(kind).value)
    if node is not None:
        stmt = stmt.where(EventRow.node_name == node)
    return list(session.scalars(stmt.order_by(EventRow.ts, EventRow.id).limit(limit)))
