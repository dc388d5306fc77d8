"""Timestamps from clients may lag or lead a little, never lie far in the future."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from brain.errors import InvalidInput


def reject_future(
    stamped: Iterable[tuple[str, datetime | None]], now: datetime, skew_s: float
) -> None:
    """Raise for the first (field, ts) later than ``now`` plus the allowed clock skew."""
    latest_allowed = now + timedelta(seconds=skew_s)
    for field, ts in stamped:
        if ts is not None and ts > latest_allowed:
            raise InvalidInput(
                f"{field} {ts.isoformat()} is in the future (allowed clock skew {skew_s:g} s)",
                field=field,
            )
