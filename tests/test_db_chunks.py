"""Statements split under the databases' bind-parameter limits (brain.db.chunks)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from brain.db.chunks import (
    MAX_PARAMETERS,
    RESERVED_PARAMETERS,
    chunked,
    in_list_chunks,
    rows_per_statement,
)

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
