"""Training a ``PeakModel`` from a history of runs (the backtest's normalized run table).

Per resource, every run with a known peak becomes one example: the features of the
earlier runs of its workload (``features``) and its own peak as the target. Runs
outside the training period may be history but are never targets.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from brain.learned_sizing import features as feat
from brain.learned_sizing.model import Examples, PeakModel, fit_resource
from brain.optimizing.sizing_model import ResourceHistory

# Per resource: the run-table columns of its peak, its mean use and its request.
COLUMNS = {
    "memory": ("mem_max", "mem_mean", "req_memory_mib"),
    "cpu": ("cpu_p95", "cpu_mean", "req_cpu"),
    "gpu_memory": ("gpu_mem_mib_max", None, "req_gpu_memory_mib"),
}
# The run's largest use where it differs from the peak judged (ResourceHistory.highs).
HIGHS = {"cpu": "cpu_max"}


@dataclass(frozen=True)
class Sized:
    """A run of the table (``index``) with its own peak and the history before it."""

    index: int
    peak: float
    history: ResourceHistory


def runs_with_history(table: pd.DataFrame, resource: str) -> Iterator[Sized]:
    """Every run with a known ``resource`` peak, with its workload's earlier such runs.

    ``table`` is sorted by workload, then start (as the normalized run table is).
    """
    peak_column, mean_column, request_column = COLUMNS[resource]
    if peak_column not in table:
        return
    peaks = table[peak_column].to_numpy(dtype=float)
    means = (
        table[mean_column].to_numpy(dtype=float)
        if mean_column in table
        else np.full(len(table), np.nan)
    )
    requests = table[request_column].to_numpy(dtype=float)
    high_column = HIGHS.get(resource)
    highs = table[high_column].to_numpy(dtype=float) if high_column in table else None
    hours = table["duration_h"].to_numpy(dtype=float)
    workloads = table["workload"].to_numpy()
    start = 0
    while start < len(table):
        end = start
        while end < len(table) and workloads[end] == workloads[start]:
            end += 1
        rows = [i for i in range(start, end) if not math.isnan(peaks[i])]
        for position, i in enumerate(rows):
            earlier = rows[max(0, position - feat.MAX_RUNS) : position]
            yield Sized(
                index=i,
                peak=float(peaks[i]),
                history=ResourceHistory(
                    peaks=[float(peaks[j]) for j in earlier],
                    means=[float(means[j]) for j in earlier],
                    requests=[_known(requests[j]) for j in earlier],
                    durations_h=[float(hours[j]) for j in earlier],
                    request=_known(requests[i]),
                    highs=[] if highs is None else [float(highs[j]) for j in earlier],
                ),
            )
        start = end


def examples(table: pd.DataFrame, resource: str, within: np.ndarray) -> Examples:
    """The training examples of ``resource``: runs ``within`` the training period."""
    floor = feat.FLOOR[resource]
    workload_of = pd.factorize(table["workload"])[0]
    x, y, runs, workloads = [], [], [], []
    for sized in runs_with_history(table, resource):
        if not within[sized.index]:
            continue
        row = feat.features(sized.history, floor)
        if row is None:
            continue
        x.append(row)
        y.append(feat.target(sized.peak, feat.reference(sized.history), floor))
        runs.append(min(len(sized.history.peaks), feat.MAX_RUNS))
        workloads.append(workload_of[sized.index])
    width = len(feat.NAMES)
    return Examples(
        np.asarray(x, dtype=float).reshape(-1, width),
        np.asarray(y, dtype=float),
        np.asarray(runs, dtype=int),
        np.asarray(workloads, dtype=np.int64),
    )


def train(
    table: pd.DataFrame, within: np.ndarray | None = None, now: datetime | None = None
) -> PeakModel:
    """A model of every resource the runs ``within`` the training period have peaks of."""
    now = now or datetime.now(UTC)
    within = np.ones(len(table), dtype=bool) if within is None else within
    resources = {}
    for resource in COLUMNS:
        fitted = fit_resource(resource, examples(table, resource, within))
        if fitted is not None:
            resources[resource] = fitted
    starts = table["start"][within]
    return PeakModel(
        version=now.strftime("%Y%m%dT%H%M%SZ"),
        trained_at=now.isoformat().replace("+00:00", "Z"),
        period_start=_iso(starts.min()) if len(starts) else None,
        period_end=_iso(starts.max()) if len(starts) else None,
        runs=int(within.sum()),
        resources=resources,
    )


def _known(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _iso(stamp: pd.Timestamp) -> str:
    return stamp.isoformat().replace("+00:00", "Z")
