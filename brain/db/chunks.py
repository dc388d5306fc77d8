"""Statements built from collections of any size, split so none passes the databases'
limit on bind parameters.

PostgreSQL's protocol carries at most 65,535 parameters in one statement (psycopg refuses
more before sending anything), SQLite at most ``SQLITE_MAX_VARIABLE_NUMBER`` (32,766
since SQLite 3.32). A multi-row INSERT spends one parameter per column and row, an
``IN (...)`` list one per value: 7,282 new nodes of 9 columns in one push were over
PostgreSQL's limit. The pieces run one after another on the caller's session, so a
request stays one transaction however many statements it takes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

# Below both databases' limits, with room for the few parameters a statement adds
# besides its rows or list (a job id, a status).
MAX_PARAMETERS = 30_000
RESERVED_PARAMETERS = 100

T = TypeVar("T")


def chunked(values: Iterable[T], size: int) -> Iterator[list[T]]:
    """``values`` in lists of at most ``size``, in order."""
    if size < 1:
        raise ValueError(f"chunk size {size} is not positive")
    items = iter(values)
    while chunk := list(islice(items, size)):
        yield chunk


def rows_per_statement(columns: int) -> int:
    """How many rows of ``columns`` values one multi-row INSERT may carry."""
    return max(1, (MAX_PARAMETERS - RESERVED_PARAMETERS) // columns)


def in_list_chunks(values: Iterable[T]) -> Iterator[list[T]]:
    """``values`` in lists that one ``IN (...)`` each may take."""
    return chunked(values, MAX_PARAMETERS - RESERVED_PARAMETERS)
