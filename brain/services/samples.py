"""Store and read usage time series.

A batch is written in one statement per table with insert-or-ignore on the natural
key (node, ts) / (job, ts): a retried batch, or a point the collector and the job
master both report, is stored once and counted as a duplicate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select, text
from sqlalchemy.orm import Session

from brain.db.models import JobRow, NodeRow, NodeSampleRow, SpeedSampleRow
from brain.domain import JobStatus, as_utc
from brain.services.nodes import NodeRef, ensure_nodes


@dataclass(frozen=True, slots=True)
class NodePoint:
    name: str
    role: str
    index: int
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None = None
    gpu_memory_mib: float | None = None
    gpu_memory_total_mib: float | None = None
    step_time_s: float | None = None


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


NODE_COLUMNS = (
    "node_id",
    "ts",
    "job_id",
    "cpu",
    "memory_mib",
    "gpu_util",
    "gpu_memory_mib",
    "gpu_memory_total_mib",
    "step_time_s",
)
SPEED_COLUMNS = ("job_id", "ts", "global_step", "steps_per_sec", "workers")
PG_ARRAY_TYPES = {
    "node_id": "int4",
    "job_id": "int4",
    "ts": "timestamptz",
    "global_step": "int8",
    "workers": "int4",
}


def ingest(
    session: Session, job: JobRow, nodes: Sequence[NodePoint], speed: Sequence[SpeedPoint]
) -> IngestResult:
    """Store a batch; returns how many points were new and how many were already there."""
    node_ids = ensure_nodes(session, job, (NodeRef(p.name, p.role, p.index) for p in nodes))
    node_rows = {
        (node_ids[p.name], p.ts): (
            node_ids[p.name],
            p.ts,
            job.id,
            p.cpu,
            p.memory_mib,
            p.gpu_util,
            p.gpu_memory_mib,
            p.gpu_memory_total_mib,
            p.step_time_s,
        )
        for p in nodes
    }
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
    # One statement for the whole batch: each column travels as one array parameter.
    arrays = {col: [row[i] for row in rows] for i, col in enumerate(columns)}
    for col, values in arrays.items():
        if col not in PG_ARRAY_TYPES:  # psycopg cannot send a list mixing ints and floats
            arrays[col] = [None if v is None else float(v) for v in values]
    selects = ", ".join(f"CAST(:{col} AS {PG_ARRAY_TYPES.get(col, 'float8')}[])" for col in columns)
    sql = text(
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT * FROM unnest({selects}) ON CONFLICT DO NOTHING"
    )
    return conn.execute(sql, arrays).rowcount


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


def node_samples(
    session: Session, job: JobRow, query: SampleQuery
) -> list[tuple[NodeRow, NodeSampleRow]]:
    """A job's node samples in time order, filtered; at most ``query.limit`` rows."""
    stmt = (
        select(NodeRow, NodeSampleRow)
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
    return [(node, sample) for node, sample in session.execute(stmt)]


def speed_samples(session: Session, job: JobRow, query: SampleQuery) -> list[SpeedSampleRow]:
    stmt = select(SpeedSampleRow).where(SpeedSampleRow.job_id == job.id)
    if query.start is not None:
        stmt = stmt.where(SpeedSampleRow.ts >= query.start)
    if query.end is not None:
        stmt = stmt.where(SpeedSampleRow.ts < query.end)
    return list(session.scalars(stmt.order_by(SpeedSampleRow.ts).limit(query.limit)))
