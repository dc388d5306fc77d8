"""The time window of the console's jobs list: the last 7, 30 or 90 days, or a custom
from/to (dates, or RFC 3339 times), read from the form's fields with the problems named
by field."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

WINDOW_DAYS = (7, 30, 90)


@dataclass
class Window:
    since: datetime | None = None  # inclusive
    before: datetime | None = None  # exclusive
    problems: list[str] = field(default_factory=list)


def window_of(days: str | None, start: str | None, end: str | None, now: datetime) -> Window:
    """``days`` back from ``now``, or ``start`` to ``end`` (a date ``end`` counts whole);
    each field that does not parse is a problem naming it and changes nothing."""
    window = Window()
    if days and (start or end):
        window.problems.append("give days or from/to, not both")
        return window
    if days:
        if days not in {str(d) for d in WINDOW_DAYS}:
            allowed = ", ".join(str(d) for d in WINDOW_DAYS)
            window.problems.append(f"days {days!r} is not one of {allowed}")
        else:
            window.since = now - timedelta(days=int(days))
        return window
    if start:
        window.since = _moment(start, "from", window.problems, end_of_day=False)
    if end:
        window.before = _moment(end, "to", window.problems, end_of_day=True)
    if window.since and window.before and window.since >= window.before:
        window.problems.append("from must be before to")
        window.since = window.before = None
    return window


def _moment(text: str, name: str, problems: list[str], end_of_day: bool) -> datetime | None:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
        return moment + timedelta(days=1) if end_of_day else moment
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        problems.append(f"{name} {text!r} is not a date (YYYY-MM-DD) or an RFC 3339 time")
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
