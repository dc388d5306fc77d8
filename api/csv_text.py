"""Tables as CSV text, the same way for the console and the API: a header row, times in
RFC 3339 UTC, floats to a millionth, None as an empty cell. The API's lists answer
``?format=csv`` with their items' fields as columns (``csv_of``)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from types import UnionType
from typing import Any, Union, get_args, get_origin

from fastapi import Query, Response
from pydantic import BaseModel

CSV_MEDIA_TYPE = "text/csv; charset=utf-8"


def cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, float):
        # Past a millionth the digits are float noise (0.41000000000000003).
        return round(value, 6)
    if hasattr(value, "value"):  # an enum: its value, not its repr
        return value.value
    return value


def csv_text(columns: list[str], rows: Iterable[Iterable[Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in rows)
    return buffer.getvalue()


# How a paged list's CSV pages on.
NEXT_OFFSET = "The next page's `offset` (`next_offset`) is in the `X-Next-Offset` header."


class ListFormat(StrEnum):
    json = "json"
    csv = "csv"


def format_query(rows: str, paging: str = "") -> Any:
    """The ``format`` query parameter of a list endpoint: ``rows`` says what a row is,
    ``paging`` how the CSV pages on (a header)."""
    return Query(
        description=f"`csv`: the answer as CSV, a header row (also when there is no row) and "
        f"{rows}; a nested object's fields are columns named `outer.inner`, a list is a JSON "
        f"cell, times are RFC 3339 UTC.{' ' + paging if paging else ''}"
    )


def csv_responses(json_description: str = "JSON") -> dict[int | str, dict[str, Any]]:
    """The OpenAPI answer of a list endpoint that also speaks CSV."""
    return {
        200: {
            "content": {"text/csv": {"schema": {"type": "string"}}},
            "description": f"{json_description}, or with `format=csv` the table as CSV.",
        }
    }


def model_columns(model: type[BaseModel], prefix: str = "") -> list[str]:
    """A model's CSV columns: its fields in order, a nested model's as ``outer.inner``; from
    the class, so an empty table still has its header."""
    columns: list[str] = []
    for name, info in model.model_fields.items():
        nested = _model_in(info.annotation)
        if nested is None:
            columns.append(prefix + name)
        else:
            columns += model_columns(nested, f"{prefix}{name}.")
    return columns


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds, alone or optional (``X | None``); lists and maps are
    cells of their own (JSON), not columns."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    for candidate in (annotation, *candidates):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def model_rows(items: Iterable[BaseModel], columns: list[str]) -> Iterator[list[Any]]:
    for item in items:
        data = item.model_dump(mode="json")
        yield [_at(data, column) for column in columns]


def _at(data: dict[str, Any], column: str) -> Any:
    value: Any = data
    for part in column.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def csv_of(
    model: type[BaseModel], items: Iterable[BaseModel], next_offset: int | None = None
) -> Response:
    """Items of ``model`` as a CSV answer; the next page's ``offset``, if any, in
    ``X-Next-Offset``."""
    columns = model_columns(model)
    headers = {"X-Next-Offset": str(next_offset)} if next_offset is not None else None
    body = csv_text(columns, model_rows(items, columns))
    return Response(body, media_type=CSV_MEDIA_TYPE, headers=headers)
