"""Store and read usage time series.

A batch is written per table with insert-or-ignore on the natural key (node, ts) /
(job, ts): a retried batch, or a point the collector and the job master both report,
is stored once and counted as a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg
from sqlalchemy import Connection, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from brain.db.engine import ReadSession
from brain.db.models import JobRow, NodeRow, NodeSampleRow, SpeedSampleRow
from brain.domain import NODE_MEASUREMENTS, JobStatus, NodePoint, as_utc
from brain.services.nodes import NodeRef, ensure_nodes


@dataclass(frozen=True, slots=True)
class SpeedPoint:
    ts: datetime
    global_step: int
    steps_per_sec: float
    workers: int


@dataclass(frozen=True)
class IngestResult:
    accepted: int
    duplicates: int


NODE_COLUMNS = ("node_id", "ts", "job_id", *NODE_MEASUREMENTS)
# One row of NODE_COLUMNS from a point, compiled from the field names: each point then
# costs plain attribute reads, cheaper on this hot path than operator.attrgetter or
# unpacking a tuple into the row.
_node_row = eval(
    "lambda node_id, job_id, p: (node_id, p.ts, job_id, "
    + ", ".join(f"p.{name}" for name in NODE_MEASUREMENTS)
    + ")"
)
SPEED_COLUMNS = ("job_id", "ts", "global_step", "steps_per_sec", "workers")
# PostgreSQL types of the columns, for binary COPY; any other column is float8.
PG_TYPES = {
    "node_id": "int4",
    "job_id": "int4",
    "ts": "timestamptz",
    "global_step": "int8",
    "workers": "int4",
}


def ingest(
    session: Session, job: JobRow, nodes: Sequence[NodePoint], speed: Sequence[SpeedPoint]
) -> IngestResult:
    """Store a batch; returns how many points were new and how many were already there.

    ``nodes`` are NodePoints or objects with the same attributes: the API's validated
    points are read as they are, not copied."""
    refs: dict[str, NodeRef] = {}
    for p in nodes:
        if p.name not in refs:
            refs[p.name] = NodeRef(p.name, p.role, p.index)
    node_ids = ensure_nodes(session, job, refs.values())
    # A point repeated within the batch is stored once (its last values).
    node_rows: dict[tuple[int, datetime], tuple] = {}
    for p in nodes:
        node_id = node_ids[p.name]
        node_rows[node_id, p.ts] = _node_row(node_id, job.id, p)
    speed_rows = {p.ts: (job.id, p.ts, p.global_step, p.steps_per_sec, p.workers) for p in speed}
    conn = session.connection()
    inserted = _insert_ignore(
        conn, NodeSampleRow.__tablename__, NODE_COLUMNS, list(node_rows.values())
    )
    inserted += _insert_ignore(
        conn, SpeedSampleRow.__tablename__, SPEED_COLUMNS, list(speed_rows.values())
    )
    if inserted and JobStatus(job.status).finished:
        # New points for a finished job: its summary is stale until recomputed, and
        # retention must not age out points the next summary needs.
        job.summarized_at = None
    total = len(nodes) + len(speed)
    return IngestResult(accepted=inserted, duplicates=total - inserted)


def _insert_ignore(conn: Connection, table: str, columns: Sequence[str], rows: list[tuple]) -> int:
    if not rows:
        return 0
    if conn.dialect.name == "postgresql":
        return _insert_ignore_pg(conn, table, columns, rows)
    placeholders = ", ".join("?" for _ in columns)
    sql = f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({placeholders})"
    raw = conn.connection.driver_connection
    cursor = raw.cursor()
    try:
        cursor.executemany(sql, [_sqlite_row(row) for row in rows])
        return cursor.rowcount
    finally:
        cursor.close()


def _insert_ignore_pg(
    conn: Connection, table: str, columns: Sequence[str], rows: list[tuple]
) -> int:
    """Binary COPY straight into the table, under a savepoint; if any point is stored
    already, COPY into a session-local staging table and move that in one
    INSERT ... SELECT ... ON CONFLICT DO NOTHING.

    Binary COPY is the cheapest way in for both sides: psycopg packs binary rows with
    less CPU than it formats COPY text or binds array parameters, and PostgreSQL reads
    them without parsing text. A batch of new points (the usual case) costs PostgreSQL
    what a bare COPY does; the staging table, dearer per point, is paid only by retries
    and overlaps, which fail the first COPY on the primary key. A concurrent batch holding
    one of the same points makes the first COPY wait for it, then fail if it committed.
    """
    raw = conn.connection.driver_connection
    types = [PG_TYPES.get(col, "float8") for col in columns]
    names = ", ".join(columns)
    stage = f"{table}_incoming"
    try:
        with raw.cursor() as cursor:
            try:
                with raw.transaction():  # a savepoint: SQLAlchemy's transaction is open
                    _copy(cursor, table, names, types, rows)
                return len(rows)
            except psycopg.errors.UniqueViolation:
                pass
            # Created once per connection: no catalog churn per batch. The move deletes
            # what it moved; the dead rows (temporary tables are never autovacuumed) go
            # at commit.
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {stage} (LIKE {table}) ON COMMIT DELETE ROWS"
            )
            _copy(cursor, stage, names, types, rows)
            cursor.execute(
                f"WITH moved AS (DELETE FROM {stage} RETURNING {names}) "
                f"INSERT INTO {table} ({names}) SELECT {names} FROM moved ON CONFLICT DO NOTHING"
            )
            return cursor.rowcount
    except psycopg.Error as exc:
        # Raised past SQLAlchemy: wrap it as SQLAlchemy would, so the API's handlers
        # (a refused value, the database gone) answer as for any other statement.
        raise DBAPIError.instance(f"COPY {table}", None, exc, psycopg.Error) from exc


def _copy(
    cursor: psycopg.Cursor, table: str, names: str, types: list[str], rows: list[tuple]
) -> None:
    with cursor.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)


def _sqlite_row(row: tuple) -> tuple:
    # sqlite3 has no datetime adapter worth using; store UTC text as SQLAlchemy does.
    return tuple(
        as_utc(v).strftime("%Y-%m-%d %H:%M:%S.%f") if isinstance(v, datetime) else v for v in row
    )


@dataclass
class SampleQuery:
    node: str | None = None
    role: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    limit: int = 10_000


def node_samples(session: ReadSession, job: JobRow, query: SampleQuery) -> list[NodePoint]:
    """A job's node samples in time order, filtered; at most ``query.limit`` points."""
    stmt = (
        select(
            NodeRow.name,
            NodeRow.role,
            NodeRow.index,
            NodeSampleRow.ts,
            *(getattr(NodeSampleRow, m) for m in NODE_MEASUREMENTS),
        )
        .join(NodeRow, NodeRow.id == NodeSampleRow.node_id)
        .where(NodeSampleRow.job_id == job.id)
    )
    if query.node is not None:
        stmt = stmt.where(NodeRow.name == query.node)
    if query.role is not None:
        stmt = stmt.where(NodeRow.role == query.role)
    if query.start is not None:
        stmt = stmt.where(NodeSampleRow.ts >= query.start)
    if query.end is not None:
        stmt = stmt.where(NodeSampleRow.ts < query.end)
    stmt = stmt.order_by(NodeSampleRow.ts, NodeRow.name).limit(query.limit)
    return [NodePoint(*row) for row in session.execute(stmt)]


def speed_samples(session: ReadSession, job: JobRow, query: SampleQuery) -> list[SpeedSampleRow]:
    stmt = select(SpeedSampleRow).where(SpeedSampleRow.job_id == job.id)
    if query.start is not None:
        stmt = stmt.where(SpeedSampleRow.ts >= query.start)
    if query.end is not None:
        stmt = stmt.where(SpeedSampleRow.ts < query.end)
    return list(session.scalars(stmt.order_by(SpeedSampleRow.ts).limit(query.limit)))
