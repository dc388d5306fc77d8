"""The figures of a replay, per recommender and resource.

For the runs a figure covers (those with a known peak and request):

- ``under_rate``: share of runs whose peak is above the size (memory: OOM-killed;
  CPU: 95th percentile above it, throttled; GPU memory: above the share of the card);
- ``slack_mean``: mean of ``(size - peak) / size`` over the runs not under-provisioned;
- ``alloc_used``: sum of sizes / sum of peaks;
- ``resource_hours_change``: (sum of size x hours - sum of request x hours) / sum of
  request x hours, the change in allocated resource-hours against the request as given;
- ``fallback_runs``: runs the recommender had no opinion on; they are sized with the
  request as given, as the service would keep it.

Runs with fewer than ``min_history`` earlier runs are counted apart, as cold start.
Figures cover the runs of one period when a mask is given (out-of-time validation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from brain.lab.backtest.engine import Replay
from brain.replay.resources import BY_NAME


@dataclass(frozen=True)
class Figures:
    runs: int
    under_rate: float | None
    slack_mean: float | None
    alloc_used: float | None
    resource_hours_change: float | None
    fallback_runs: int


@dataclass(frozen=True)
class CurvePoint:
    knob_value: float
    alloc_used: float
    under_rate: float


@dataclass(frozen=True)
class Curve:
    """A recommender family's figures on one resource as its knob moves."""

    family: str
    knob: str
    resource: str
    points: tuple[CurvePoint, ...]


@dataclass(frozen=True)
class Row:
    """The figures of one recommender on one resource."""

    name: str
    resource: str
    warm: Figures
    cold_start: Figures


def figures(
    size: np.ndarray, peak: np.ndarray, request: np.ndarray, hours: np.ndarray, fallback: np.ndarray
) -> Figures:
    """Figures over aligned arrays (sizes already with the fallback filled in)."""
    runs = len(size)
    if runs == 0:
        return Figures(0, None, None, None, None, 0)
    under = peak > size
    fits = ~under
    slack = None
    if fits.any():
        fitted_size, fitted_peak = size[fits], peak[fits]
        # A zero size fits only a zero peak: no slack there.
        ratios = np.divide(
            fitted_size - fitted_peak,
            fitted_size,
            out=np.zeros(len(fitted_size)),
            where=fitted_size > 0,
        )
        slack = float(ratios.mean())
    peak_sum = float(peak.sum())
    requested_hours = float((request * hours).sum())
    return Figures(
        runs=runs,
        under_rate=float(under.mean()),
        slack_mean=slack,
        alloc_used=float(size.sum()) / peak_sum if peak_sum > 0 else None,
        resource_hours_change=(
            float((size * hours).sum()) / requested_hours - 1.0 if requested_hours > 0 else None
        ),
        fallback_runs=int(fallback.sum()),
    )


def evaluate(
    table: pd.DataFrame, result: Replay, min_history: int, within: np.ndarray | None = None
) -> list[Row]:
    """One row per (recommender, resource) of ``result``, in replay order, over the runs
    ``within`` selects (all by default)."""
    warm = result.history_len >= min_history
    if within is None:
        within = np.ones(len(table), dtype=bool)
    hours = table["duration_h"].to_numpy(dtype=float)
    rows = []
    for (name, resource_name), sizes in result.sizes.items():
        resource = BY_NAME[resource_name]
        peak = table[resource.peak].to_numpy(dtype=float)
        request = table[resource.request].to_numpy(dtype=float)
        known = ~np.isnan(peak) & ~np.isnan(request) & within
        fallback = np.isnan(sizes)
        filled = np.where(fallback, request, sizes)
        per_part = [
            figures(filled[s], peak[s], request[s], hours[s], fallback[s])
            for s in (known & warm, known & ~warm)
        ]
        rows.append(Row(name, resource_name, *per_part))
    return rows
