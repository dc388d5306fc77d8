"""Speed against worker count, fitted to measured step times (Pollux, Gavel).

A replica's step time at ``n`` replicas, over its step time alone, is
``1 + a + b x log2(n)`` from 2 replicas on (1 alone: one replica synchronises with no
one); between 1 and 2 effective workers the sync cost ramps in linearly, so that a
worker with half its CPU is a continuous half step. ``a`` is the fixed cost of joining
a synchronous group (Pollux's BERT: 1.65 step times), ``b`` what each doubling of the
group adds. The job's speed is ``n / step_time(n)`` single-worker steps per second.

Past the largest group measured, more workers add nothing.

``fit_curve`` is the least-squares fit ``scripts/fit_measured_curves.py`` runs at build
time on ../shared/data/throughput; the fitted table is committed beside this module
(``measured_table.py``) and the points it was fitted to as a test fixture, so the tests
check both without the reference data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MeasuredCurve:
    source: str  # "pollux" or "gavel-v100"
    model: str
    batch: int  # the local (per-replica) batch size measured
    sync_fixed: float  # a: step times added by joining a group of 2 or more
    sync_per_doubling: float  # b: step times added per doubling of the group
    # The largest group measured: workers past it add nothing (the curve is not known
    # there, and a guess that they help would set a best no measurement supports).
    max_workers: int = 64

    @property
    def key(self) -> str:
        return f"{self.source}/{self.model}/{self.batch}"

    def relative_step_time(self, workers: float) -> float:
        """A replica's step time with ``workers`` effective workers, over its time alone."""
        if workers <= 1:
            return 1.0
        sync = self.sync_fixed + self.sync_per_doubling * math.log2(workers)
        return 1.0 + min(workers - 1.0, 1.0) * sync

    def speedup(self, workers: float) -> float:
        """The job's speed with ``workers`` effective workers, over one worker's."""
        if workers <= 0:
            return 0.0
        workers = min(workers, self.max_workers)
        return workers / self.relative_step_time(workers)


def fit_curve(points: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """``(a, b)`` minimising the squared relative error of ``1 + a + b log2(n)`` against
    the relative step times ``points`` = ``[(n, t(n) / t(1)), ...]`` at ``n >= 2`` (least
    squares weighted by ``1 / t^2``, so that a slow point counts no more than a fast one),
    with ``a, b >= 0``: a group is never faster per replica than one alone."""
    rows = [(math.log2(n), t - 1.0, 1.0 / t**2) for n, t in points if n >= 2]
    if not rows:
        raise ValueError("no point with 2 or more replicas")
    total = sum(w for _, _, w in rows)
    mean_x = sum(w * x for x, _, w in rows) / total
    mean_y = sum(w * y for _, y, w in rows) / total
    sxx = sum(w * (x - mean_x) ** 2 for x, _, w in rows)
    sxy = sum(w * (x - mean_x) * (y - mean_y) for x, y, w in rows)
    b = sxy / sxx if sxx else 0.0
    a = mean_y - b * mean_x
    if b < 0:  # flat in n: the mean
        a, b = max(mean_y, 0.0), 0.0
    if a < 0:  # through the origin in (log2 n, t - 1)
        b = max(sum(w * x * y for x, y, w in rows) / sum(w * x * x for x, _, w in rows), 0.0)
        a = 0.0
    return a, b


def speed_errors(curve: MeasuredCurve, points: Sequence[tuple[int, float]]) -> list[float]:
    """Relative errors of the curve's speed at each measured point (n, t(n) / t(1))."""
    return [abs(curve.speedup(n) / (n / t) - 1.0) for n, t in points]
