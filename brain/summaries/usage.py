"""Usage statistics of a job's node samples, per node and per role.

PostgreSQL aggregates in one statement (``percentile_cont`` over grouping sets); other
databases (the embedded SQLite default) read the job's samples into numpy. Both give
the same numbers: percentiles interpolate linearly between the ordered samples, nulls
(e.g. GPU metrics of a CPU node) are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

import numpy as np
from sqlalchemy import Double, Integer, String, column, func, literal, select, tuple_
from sqlalchemy.dialects.postgresql import ARRAY

from brain.db.engine import ReadSession, sort_memory
from brain.db.models import NodeRow, NodeSampleRow
from brain.domain import as_utc

METRICS = ("cpu", "memory_mib", "gpu_util", "gpu_memory_mib")
PERCENTILES = (0.5, 0.95)
SORT_MEMORY = "256MB"


@dataclass(frozen=True)
class Stat:
    """mean, p50, p95 and max of one metric; ``None`` throughout when it has no samples."""

    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Usage:
    """Usage over a set of samples (one node's, or all of one role's nodes pooled)."""

    samples: int
    first_ts: datetime
    last_ts: datetime
    cpu: Stat
    memory_mib: Stat
    gpu_util: Stat
    gpu_memory_mib: Stat
    gpu_memory_total_mib: float | None


@dataclass(frozen=True)
class JobUsage:
    by_node: dict[int, Usage]
    by_role: dict[str, Usage]


def job_usage(session: ReadSession, nodes: dict[int, list[NodeRow]]) -> dict[int, JobUsage]:
    """The usage of each job's samples (job id -> its nodes; jobs without samples get
    empty ``JobUsage``)."""
    if session.get_bind().dialect.name == "postgresql":
        return _job_usage_sql(session, nodes)
    return {job_id: _job_usage_rows(session, job_id) for job_id in nodes}


def _unnest_table(name: str, **columns: tuple[Sequence[Any], Any]) -> Any:
    """``unnest`` of one array per column as a table ``name``: the rows travel as a few
    array parameters, so the statement's text (and SQLAlchemy's compiled form, cached)
    stays the same whatever the rows. A ``VALUES`` list would be compiled anew for
    every batch, which costs more client CPU than skipping the join saves."""
    arrays = [literal(list(data), ARRAY(kind)) for data, kind in columns.values()]
    return (
        func.unnest(*arrays)
        .table_valued(*(column(key, kind) for key, (_, kind) in columns.items()))
        .render_derived(name=name)
    )


def _job_usage_sql(session: ReadSession, nodes: dict[int, list[NodeRow]]) -> dict[int, JobUsage]:
    job_ids = list(nodes)
    result = {job_id: JobUsage({}, {}) for job_id in job_ids}
    # The caller's nodes give each sample's role: joining the nodes table would hash all
    # of it for every batch.
    pairs = [(node.id, node.role) for job_nodes in nodes.values() for node in job_nodes]
    if not pairs:
        return result
    node_ids, role_names = zip(*pairs, strict=True)
    roles = _unnest_table("roles", node_id=(node_ids, Integer), role=(role_names, String))
    columns = [
        NodeSampleRow.job_id,
        roles.c.role,
        NodeSampleRow.node_id,
        func.count(),
        func.min(NodeSampleRow.ts),
        func.max(NodeSampleRow.ts),
    ]
    fractions = literal(list(PERCENTILES), ARRAY(Double))
    for metric in METRICS:
        values_of = getattr(NodeSampleRow, metric)
        columns += [
            func.avg(values_of),
            func.percentile_cont(fractions, type_=ARRAY(Double)).within_group(values_of),
            func.max(values_of),
        ]
    columns.append(func.max(NodeSampleRow.gpu_memory_total_mib))
    job, role, node = NodeSampleRow.job_id, roles.c.role, NodeSampleRow.node_id
    stmt = (
        select(*columns)
        .join(roles, roles.c.node_id == NodeSampleRow.node_id)
        .where(NodeSampleRow.job_id.in_(job_ids))
        # One sort by (job, role, node) serves both levels: per node, and pooled per role.
        .group_by(func.grouping_sets(tuple_(job, role, node), tuple_(job, role)))
    )
    # The sorts of a large job (100 nodes x 24 h of 15 s samples) spill to disk with the
    # default work_mem; SORT_MEMORY keeps them in memory.
    with sort_memory(session, SORT_MEMORY):
        rows = session.execute(stmt).all()
    for row in rows:
        job_id, role, node_id, count, first, last = row[:6]
        stats = []
        for i in range(len(METRICS)):
            mean, pcts, peak = row[6 + 3 * i : 9 + 3 * i]
            p50, p95 = pcts if pcts is not None else (None, None)
            stats.append(Stat(_float(mean), _float(p50), _float(p95), _float(peak)))
        usage = Usage(count, as_utc(first), as_utc(last), *stats, _float(row[-1]))
        if node_id is None:
            result[job_id].by_role[role] = usage
        else:
            result[job_id].by_node[node_id] = usage
    return result


def _job_usage_rows(session: ReadSession, job_id: int) -> JobUsage:
    stmt = (
        select(
            NodeRow.role,
            NodeSampleRow.node_id,
            NodeSampleRow.ts,
            NodeSampleRow.gpu_memory_total_mib,
        )
        .add_columns(*(getattr(NodeSampleRow, m) for m in METRICS))
        .join(NodeRow, NodeRow.id == NodeSampleRow.node_id)
        .where(NodeSampleRow.job_id == job_id)
        .order_by(NodeRow.role, NodeSampleRow.node_id)
    )
    result = JobUsage({}, {})
    for role, role_rows in groupby(session.execute(stmt).all(), key=lambda r: r.role):
        role_rows = list(role_rows)
        result.by_role[role] = _usage_of(role_rows)
        for node_id, node_rows in groupby(role_rows, key=lambda r: r.node_id):
            result.by_node[node_id] = _usage_of(list(node_rows))
    return result


def _usage_of(rows: list) -> Usage:
    stats = []
    for metric in METRICS:
        values = np.array([getattr(r, metric) for r in rows], dtype=float)  # None -> nan
        values = values[~np.isnan(values)]
        if values.size == 0:
            stats.append(Stat())
            continue
        # numpy's default (linear) interpolation is what percentile_cont does.
        p50, p95 = np.percentile(values, [p * 100 for p in PERCENTILES])
        stats.append(Stat(float(values.mean()), float(p50), float(p95), float(values.max())))
    totals = [r.gpu_memory_total_mib for r in rows if r.gpu_memory_total_mib is not None]
    return Usage(
        samples=len(rows),
        first_ts=as_utc(min(r.ts for r in rows)),
        last_ts=as_utc(max(r.ts for r in rows)),
        cpu=stats[0],
        memory_mib=stats[1],
        gpu_util=stats[2],
        gpu_memory_mib=stats[3],
        gpu_memory_total_mib=max(totals) if totals else None,
    )


def _float(value) -> float | None:
    return None if value is None else float(value)
