"""Tables as CSV text, the same way for the console and the API: a header row, times in
RFC 3339 UTC, floats to a millionth, None as an empty cell."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

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
