"""Durations as people write them: ``90``, ``90s``, ``30m``, ``2h``, ``1d12h``, ``1w``."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration_s(text: str) -> float:
    """Seconds of ``text`` (a bare number is seconds); ``ValueError`` naming the text."""
    value = str(text).strip().lower()
    try:
        return float(value)
    except ValueError:
        pass
    parts = _PART.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"invalid duration {text!r}: use e.g. 90s, 30m, 2h, 1d12h")
    return sum(float(number) * _UNIT_S[unit] for number, unit in parts)
