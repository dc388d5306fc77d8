"""Time ranges of a backtest: the period knobs are tuned on and the period figures are
reported on (out-of-time validation).

A period is written ``START..END`` (ISO dates or times, UTC unless an offset is given;
``END`` excluded; either side may be left out), or as one month ``YYYY-MM`` or one day
``YYYY-MM-DD``. A run belongs to a period when its start lies in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

MONTH = re.compile(r"^\d{4}-\d{1,2}$")
DAY = re.compile(r"^\d{4}-\d{1,2}-\d{1,2}$")


class PeriodError(ValueError):
    """The text is not a period."""


@dataclass(frozen=True)
class Period:
    start: pd.Timestamp | None  # included
    end: pd.Timestamp | None  # excluded
    text: str

    def mask(self, starts: pd.Series) -> np.ndarray:
        """Which of the run starts ``starts`` lie in the period."""
        inside = np.ones(len(starts), dtype=bool)
        if self.start is not None:
            inside &= (starts >= self.start).to_numpy()
        if self.end is not None:
            inside &= (starts < self.end).to_numpy()
        return inside

    def overlaps(self, other: Period) -> bool:
        starts_before_other_ends = self.start is None or other.end is None or self.start < other.end
        ends_after_other_starts = self.end is None or other.start is None or self.end > other.start
        return starts_before_other_ends and ends_after_other_starts


def parse_period(text: str) -> Period:
    """The period ``text`` names (see the module docstring)."""
    text = text.strip()
    if ".." in text:
        first, _, second = text.partition("..")
        start, end = _time(first), _time(second)
        if start is not None and end is not None and end <= start:
            raise PeriodError(f"{text!r}: the end must be after the start")
        return Period(start, end, text)
    if MONTH.match(text):
        start = _time(f"{text}-01")
        return Period(start, start + pd.DateOffset(months=1), text)
    if DAY.match(text):
        start = _time(text)
        return Period(start, start + pd.Timedelta(days=1), text)
    raise PeriodError(f"{text!r} is not START..END, YYYY-MM or YYYY-MM-DD")


def _time(text: str) -> pd.Timestamp | None:
    text = text.strip()
    if not text:
        return None
    try:
        stamp = pd.Timestamp(text)
    except (ValueError, TypeError) as exc:
        raise PeriodError(f"cannot read {text!r} as a time") from exc
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
