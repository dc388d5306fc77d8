"""The units the bounding steps write sizes in, and the step a bounded size is rounded
to: 0.01 core, 1 MiB, 1 GPU (a fraction of a GPU only for a size already below one
card, so a role sharing a card keeps sharing)."""

from __future__ import annotations

import math

from brain.optimizing.roles import EPSILON

UNITS = {"cpu": "cores", "memory_mib": "MiB", "gpu": "GPUs"}
_STEPS = {"cpu": 0.01, "memory_mib": 1.0, "gpu": 1.0}


def step(field: str, size: float) -> float:
    """The step a size of ``field`` is rounded to."""
    if field == "gpu" and size < 1:
        return 0.01  # a role sharing a card keeps sharing
    return _STEPS[field]


def floor_to(value: float, step: float) -> float:
    """``value`` rounded down to a multiple of ``step``."""
    return round(math.floor(value / step + EPSILON) * step, 6)


def ceil_to(value: float, step: float) -> float:
    """``value`` rounded up to a multiple of ``step``."""
    return round(math.ceil(value / step - EPSILON) * step, 6)
