"""Chart series of a job: usage per role and training speed, on one bucket grid.

A summary stores the series at ``STORED_BUCKETS`` resolution; a portrait merges
adjacent stored buckets down to the points a chart asks for. Means are weighted by the
samples of each bucket and maxima stay maxima, so merging stored buckets gives the
numbers that bucketing the raw samples at the coarser width would.

Stored series are packed float32 matrices (one row per column, ``bucket`` first, nan
for unknown): a portrait unpacks them in microseconds, where JSON took milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from itertools import groupby

import numpy as np
from sqlalchemy import Double, Integer, column, func, select, values

from brain.db.engine import ReadSession
from brain.db.models import NodeRow, NodeSampleRow
from brain.db.types import UTCDateTime

# Divisible by the usual chart widths (100, 120, 150, 200, 300).
STORED_BUCKETS = 600

# Column -> how buckets merge. "samples" is the weight of the means.
USAGE_COLUMNS = {
    "samples": "sum",
    "cpu_mean_cores": "mean",
    "cpu_max_cores": "max",
    "memory_mean_mib": "mean",
    "memory_max_mib": "max",
    "gpu_util_mean": "mean",
    "gpu_memory_max_mib": "max",
}
SPEED_COLUMNS = {"samples": "sum", "steps_per_sec_mean": "mean", "workers_max": "max"}

# {"bucket": indexes, column: values}: only buckets that hold samples; nan = unknown.
Columns = dict[str, np.ndarray]


@dataclass(frozen=True)
class Grid:
    """``buckets`` buckets of ``bucket_seconds`` each from ``start``; bucket i is
    [start + i*width, start + (i+1)*width), the last one also holding the end."""

    start: datetime
    bucket_seconds: float
    buckets: int

    @classmethod
    def spanning(cls, first: datetime, last: datetime, buckets: int) -> Grid:
        span = (last - first).total_seconds()
        return cls(first, span / buckets if span > 0 else 1.0, buckets if span > 0 else 1)

    def bucket_starts(self, indexes: np.ndarray) -> list[datetime]:
        return [self.start + timedelta(seconds=float(i) * self.bucket_seconds) for i in indexes]


def pack(columns: Columns, merge: dict[str, str]) -> bytes:
    """``columns`` (named in ``merge``) as a float32 matrix, ``bucket`` first."""
    names = ["bucket", *merge]
    return np.vstack([columns[name] for name in names]).astype("<f4").tobytes()


def unpack(data: bytes, merge: dict[str, str]) -> Columns:
    names = ["bucket", *merge]
    matrix = np.frombuffer(data, dtype="<f4").reshape(len(names), -1).astype(float)
    return dict(zip(names, matrix, strict=True))


def usage_buckets(session: ReadSession, grids: dict[int, Grid]) -> dict[int, dict[str, Columns]]:
    """Per job (id -> its grid) and role, the usage of the job's node samples on its grid."""
    if not grids:
        return {}
    if session.get_bind().dialect.name == "postgresql":
        return _usage_buckets_sql(session, grids)
    return {job_id: _usage_buckets_rows(session, job_id, grid) for job_id, grid in grids.items()}


def _usage_buckets_rows(session: ReadSession, job_id: int, grid: Grid) -> dict[str, Columns]:
    rows = session.execute(
        select(NodeRow.role, NodeSampleRow.ts, NodeSampleRow.cpu, NodeSampleRow.memory_mib)
        .add_columns(NodeSampleRow.gpu_util, NodeSampleRow.gpu_memory_mib)
        .join(NodeRow, NodeRow.id == NodeSampleRow.node_id)
        .where(NodeSampleRow.job_id == job_id)
        .order_by(NodeRow.role)
    ).all()
    result = {}
    for role, group in groupby(rows, key=lambda row: row[0]):
        _, ts, cpu, memory, gpu_util, gpu_memory = zip(*group, strict=True)
        index = bucket_of(np.array([t.timestamp() for t in ts]), grid)
        ones = np.ones(len(index))
        values = {
            "samples": (ones, "sum"),
            "cpu_mean_cores": (cpu, "mean"),
            "cpu_max_cores": (cpu, "max"),
            "memory_mean_mib": (memory, "mean"),
            "memory_max_mib": (memory, "max"),
            "gpu_util_mean": (gpu_util, "mean"),
            "gpu_memory_max_mib": (gpu_memory, "max"),
        }
        result[role] = reduce_buckets(index, ones, values)
    return result


def _usage_buckets_sql(
    session: ReadSession, grids: dict[int, Grid]
) -> dict[int, dict[str, Columns]]:
    # Each job's grid joins its samples, so one statement buckets a whole batch of jobs.
    grid = values(
        column("job_id", Integer),
        column("start", UTCDateTime()),
        column("width", Double),
        column("last", Integer),
        name="grid",
    ).data([(job_id, g.start, g.bucket_seconds, g.buckets - 1) for job_id, g in grids.items()])
    # date_part gives float8; extract() would compute in (slow) numeric.
    seconds = func.date_part("epoch", NodeSampleRow.ts - grid.c.start)
    bucket = func.least(func.floor(seconds / grid.c.width), grid.c.last)
    bucket = bucket.cast(Integer).label("bucket")
    stmt = (
        select(
            NodeSampleRow.job_id,
            NodeRow.role,
            bucket,
            func.count(),
            func.avg(NodeSampleRow.cpu),
            func.max(NodeSampleRow.cpu),
            func.avg(NodeSampleRow.memory_mib),
            func.max(NodeSampleRow.memory_mib),
            func.avg(NodeSampleRow.gpu_util),
            func.max(NodeSampleRow.gpu_memory_mib),
        )
        .join(grid, grid.c.job_id == NodeSampleRow.job_id)
        .join(NodeRow, NodeRow.id == NodeSampleRow.node_id)
        # The join alone does not use the index: a batch read the whole table.
        .where(NodeSampleRow.job_id.in_(list(grids)))
        # No ORDER BY: PostgreSQL then hashes the few buckets instead of sorting every
        # sample by its bucket; rows are put in order here.
        .group_by(NodeSampleRow.job_id, NodeRow.role, bucket)
    )
    rows: dict[tuple[int, str], list] = {}
    for row in session.execute(stmt):
        rows.setdefault((row[0], row[1]), []).append(row[2:])
    names = ["bucket", *USAGE_COLUMNS]
    result: dict[int, dict[str, Columns]] = {job_id: {} for job_id in grids}
    for (job_id, role), buckets in rows.items():
        columns = zip(*sorted(buckets, key=lambda bucket: bucket[0]), strict=True)
        result[job_id][role] = {
            name: np.array(v, dtype=float) for name, v in zip(names, columns, strict=True)
        }
    return result


def speed_buckets(
    seconds: np.ndarray, steps_per_sec: np.ndarray, workers: np.ndarray, grid: Grid
) -> Columns:
    """Speed samples (epoch seconds, steps/s, workers) on ``grid``."""
    index = bucket_of(seconds, grid)
    ones = np.ones(len(index))
    values = {
        "samples": (ones, "sum"),
        "steps_per_sec_mean": (steps_per_sec, "mean"),
        "workers_max": (workers, "max"),
    }
    return reduce_buckets(index, ones, values)


def bucket_of(seconds: np.ndarray, grid: Grid) -> np.ndarray:
    """The grid bucket of each epoch time."""
    offset = (seconds - grid.start.timestamp()) / grid.bucket_seconds
    return np.minimum(np.floor(offset), grid.buckets - 1).astype(np.int64)


def rebucket(grid: Grid, columns: Columns, merge: dict[str, str], points: int) -> Columns:
    """``columns`` on ``coarser(grid, points)``: each run of ``factor`` buckets merged."""
    factor = merge_factor(grid, points)
    if factor == 1:
        return columns
    index = columns["bucket"].astype(np.int64) // factor
    values = {name: (columns[name], how) for name, how in merge.items()}
    return reduce_buckets(index, columns["samples"], values)


def reduce_buckets(
    index: np.ndarray, weights: np.ndarray, values: dict[str, tuple[np.ndarray, str]]
) -> Columns:
    """Group values by bucket ``index``: "sum", "max", or "mean" weighted by ``weights``.

    Unknown values (None, nan) are left out; a bucket without known values gets nan.
    """
    buckets, inverse = np.unique(index, return_inverse=True)
    result: Columns = {"bucket": buckets.astype(float)}
    for name, (raw, how) in values.items():
        column = np.asarray(raw, dtype=float)  # None -> nan
        known = ~np.isnan(column)
        if how == "max":
            merged = np.full(len(buckets), -np.inf)
            np.maximum.at(merged, inverse[known], column[known])
            merged[np.isinf(merged)] = np.nan
        elif how == "sum":
            merged = np.bincount(inverse, np.where(known, column, 0), len(buckets))
        else:
            weight = np.where(known, weights, 0)
            total = np.bincount(inverse, np.where(known, column, 0) * weight, len(buckets))
            counted = np.bincount(inverse, weight, len(buckets))
            with np.errstate(invalid="ignore", divide="ignore"):
                merged = np.where(counted > 0, total / counted, np.nan)
        result[name] = merged
    return result


def merge_factor(grid: Grid, points: int) -> int:
    return max(math.ceil(grid.buckets / points), 1)


def coarser(grid: Grid, points: int) -> Grid:
    """The grid ``rebucket`` merges into: at most ``points`` buckets."""
    factor = merge_factor(grid, points)
    return replace(
        grid,
        bucket_seconds=grid.bucket_seconds * factor,
        buckets=math.ceil(grid.buckets / factor),
    )


def as_lists(columns: Columns) -> dict[str, list]:
    """Columns as JSON-ready lists, ``None`` where a value is unknown."""
    return {name: np.where(np.isnan(v), None, v).tolist() for name, v in columns.items()}
