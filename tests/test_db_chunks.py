"""Statements split under the databases' bind-parameter limits (brain.db.chunks)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from brain.db import chunks
from brain.db.chunks import (
    MAX_PARAMETERS,
    RESERVED_PARAMETERS,
    chunked,
    in_list_chunks,
    rows_per_statement,
)
from brain.domain import EventKind, NodePoint
from brain.services.cluster import elastic_jobs
from brain.services.events import EventInput, EventsResult, record_events
from brain.services.nodes import list_nodes
from brain.services.samples import ingest
from tests.builders import add_node, make_job

SQLITE_LIMIT = 32_766  # SQLITE_MAX_VARIABLE_NUMBER since SQLite 3.32
POSTGRESQL_LIMIT = 65_535


@given(st.lists(st.integers(), max_size=300), st.integers(min_value=1, max_value=50))
def test_chunks_keep_every_value_in_order_and_none_is_over_its_size(values, size):
    chunks = list(chunked(values, size))
    assert [v for chunk in chunks for v in chunk] == values
    assert all(1 <= len(chunk) <= size for chunk in chunks)
    assert len(chunks) == -(-len(values) // size)  # ceil: only the last is short


@given(st.integers(min_value=1, max_value=2_000))
def test_a_multi_row_insert_stays_under_both_databases_limits(columns):
    rows = rows_per_statement(columns)
    assert rows * columns + RESERVED_PARAMETERS <= MAX_PARAMETERS < SQLITE_LIMIT < POSTGRESQL_LIMIT
    assert (rows + 1) * columns > MAX_PARAMETERS - RESERVED_PARAMETERS  # no smaller than needed


def test_ten_thousand_nine_column_nodes_take_four_statements():
    # 29,900 // 9 = 3,322 rows per INSERT: 10,000 new nodes in 4 statements (3 full).
    assert rows_per_statement(9) == 3_322
    assert [len(c) for c in chunked(range(10_000), rows_per_statement(9))] == [3322] * 3 + [34]
    assert [len(c) for c in in_list_chunks(range(60_000))] == [29_900, 29_900, 200]


def test_split_statements_store_and_find_what_one_statement_would(session, monkeypatch):
    """Every statement split to one row or value (as 10,000 new nodes are split to
    4): the pieces add up to what one statement stores and finds."""
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    jobs = [make_job(session, f"j{i}", start=t0, status="running") for i in range(3)]
    for job in jobs:
        for index in range(2):
            add_node(
                session,
                job,
                f"{job.uid}-worker-{index}",
                "worker",
                created_at=t0,
                cpu=4,
                memory_mib=8,
            )
    whole = elastic_jobs(session, speed_window_s=600)
    monkeypatch.setattr(chunks, "MAX_PARAMETERS", RESERVED_PARAMETERS + 1)
    assert rows_per_statement(9) == 1 and [len(c) for c in in_list_chunks("abc")] == [1, 1, 1]

    assert elastic_jobs(session, speed_window_s=600) == whole
    assert sorted((peer.uid, peer.workers) for peer in whole) == [("j0", 2), ("j1", 2), ("j2", 2)]
    points = [
        NodePoint(name=f"n{i}", role="worker", index=i, ts=t0, cpu=float(i), memory_mib=1.0)
        for i in range(5)
    ]
    assert ingest(session, jobs[0], points, []).accepted == 5
    events = [EventInput(ts=t0, kind=EventKind.oom, node=f"n{i}") for i in range(5)]
    assert record_events(session, jobs[0], events).accepted == 5
    stored = {n.name: n.index for n in list_nodes(session, jobs[0])}
    assert stored == {"j0-worker-0": 0, "j0-worker-1": 1, **{f"n{i}": i for i in range(5)}}


def test_one_call_of_events_counts_repeats_within_it_and_before_it_once(session):
    """Events go in as one executemany: an event repeated within the call, or stored
    by an earlier one, is a duplicate, and only new OOMs and failures count as kinds a
    summary counts."""
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    job = make_job(session, "j", start=t0, status="running")
    add_node(session, job, "j-worker-0", "worker", created_at=t0, cpu=4, memory_mib=8)
    oom = EventInput(ts=t0, kind=EventKind.oom, node="j-worker-0")
    assert record_events(session, job, [oom]) == EventsResult(1, 0, summarized_kinds=1)
    failed = EventInput(ts=t0, kind=EventKind.failed)
    started = EventInput(ts=t0, kind=EventKind.started)
    result = record_events(session, job, [oom, failed, failed, started, oom])
    assert result == EventsResult(accepted=2, duplicates=3, summarized_kinds=1)
