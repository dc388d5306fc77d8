"""Features of a workload's history for forecasting its next run's peak.

Everything is relative to a *reference*: the largest peak of the last ``RECENT`` runs
(the request when there is no earlier run), on a log scale, so that one model serves
workloads of any size. The target is the next peak on the same scale:
``log((peak + floor) / (reference + floor))``. ``floor`` keeps near-zero usage from
dominating (16 MiB of memory, 0.01 cores, 64 MiB of GPU memory). A feature the
history cannot give is NaN (the gradient-boosted trees route missing values).

Pure numpy: no scikit-learn here, so that serving imports stay light.
"""

from __future__ import annotations

import math

import numpy as np

from brain.optimizing.sizing_model import ResourceHistory

RECENT = 7
# Runs a forecast looks at: the service hands the create stage BRAIN_HISTORY_JOBS (10)
# related runs by default, so the model is trained on what it will be given.
MAX_RUNS = 10
FLOOR = {"memory": 64.0, "cpu": 0.1, "gpu_memory": 64.0}
NAMES = (
    "runs",
    "log_reference",
    "last_rel",
    "median_rel",
    "min_rel",
    "spread",
    "trend",
    "largest_ever_rel",
    "request_rel",
    "request_change",
    "last_duration",
    "last_mean_over_peak",
    "outgrow_rate",
    "last_jump",
    "recent_high_rel",
    "last_high_rel",
)
NAN = math.nan


def reference(history: ResourceHistory) -> float | None:
    """The scale of the forecast: the largest recent peak, else the request."""
    if history.peaks:
        return float(max(history.peaks[-RECENT:]))
    if history.request:
        return float(history.request)
    return None


def features(history: ResourceHistory, floor: float) -> np.ndarray | None:
    """The feature vector (``NAMES`` order) of ``history``; None without a reference."""
    ref = reference(history)
    if ref is None:
        return None
    base = math.log(ref + floor)

    def rel(value: float | None) -> float:
        return NAN if value is None else math.log(value + floor) - base

    peaks = [float(p) for p in history.peaks[-MAX_RUNS:]]
    highs = [float(h) for h in history.highs[-RECENT:]] or peaks[-RECENT:]
    n = len(peaks)
    recent = peaks[-RECENT:]
    logs = [math.log(p + floor) for p in recent]
    row = [
        float(n),
        base,
        rel(peaks[-1]) if n else NAN,
        rel(float(np.median(recent))) if n else NAN,
        rel(min(recent)) if n else NAN,
        float(np.std(logs)) if n >= 2 else NAN,
        _slope(logs) if n >= 3 else NAN,
        rel(max(peaks)) if n else NAN,
        rel(history.request) if history.request else NAN,
        _change(history.requests[-1] if n else None, history.request),
        math.log1p(history.durations_h[-1]) if n else NAN,
        (history.means[-1] + floor) / (peaks[-1] + floor) if n else NAN,
        _outgrow_rate(peaks) if n >= 2 else NAN,
        (math.log(peaks[-1] + floor) - math.log(max(peaks[-RECENT - 1 : -1]) + floor))
        if n >= 2
        else NAN,
        rel(max(highs)) if n else NAN,
        rel(highs[-1]) if n else NAN,
    ]
    return np.asarray(row, dtype=float)


def target(peak: float, ref: float, floor: float) -> float:
    """The next peak on the model's scale."""
    return math.log(peak + floor) - math.log(ref + floor)


def size_of(value: float, ref: float, floor: float) -> float:
    """The size a value on the model's scale stands for (inverse of ``target``)."""
    return max((ref + floor) * math.exp(value) - floor, 0.0)


def _slope(values: list[float]) -> float:
    x = np.arange(len(values), dtype=float)
    x -= x.mean()
    return float((x * (np.asarray(values) - np.mean(values))).sum() / (x * x).sum())


def _change(before: float | None, now: float | None) -> float:
    if not before or not now:
        return NAN
    return math.log(now / before)


def _outgrow_rate(peaks: list[float]) -> float:
    """Share of runs whose peak was above every peak of the ``RECENT`` runs before them."""
    outgrown = sum(1 for i in range(1, len(peaks)) if peaks[i] > max(peaks[max(0, i - RECENT) : i]))
    return outgrown / (len(peaks) - 1)
