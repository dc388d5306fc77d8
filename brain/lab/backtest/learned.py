"""The learned recommender in a backtest: trained on the tuning period, scored on the other.

The model (``brain.learned_sizing``) is fitted on the runs of the tuning period (all
runs when there is none: in-sample), then every run is forecast from its earlier runs
in one batch and sized at each risk of the sweep, with the same rule as the
``learned_peak`` optimizer (``brain.learned_sizing.risk_sizing.size_for``): memory and GPU
memory capped at the request as given, sizes rounded up to 1 MiB / 0.01 cores.

Calibration: for the scored runs and every risk of the sweep, the risk the model
states for the size it gave against whether the run's peak exceeded it, grouped by
deciles of the stated risk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from brain.lab.backtest.engine import Replay
from brain.learned_sizing.model import DESIGN_RISKS, Forecast, PeakModel
from brain.learned_sizing.risk_sizing import size_for
from brain.learned_sizing.training import COLUMNS, runs_with_history, train

NAME = "learned_peak"
KNOB = "risk"
RISKS = (0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)
DEFAULT_RISKS = DESIGN_RISKS  # learned_peak's defaults
STEPS = {"memory": 1.0, "cpu": 0.01, "gpu_memory": 1.0}
CAPPED = {"memory": True, "cpu": False, "gpu_memory": True}


def member_name(risk: float) -> str:
    return f"{NAME}_r{risk:g}"


@dataclass(frozen=True)
class Sized:
    """Sizes and stated risks of one resource at one risk, per row (NaN: no opinion)."""

    size: np.ndarray
    stated: np.ndarray


@dataclass
class Learned:
    model: PeakModel
    forecasts: dict[str, list[Forecast | None]]  # per resource, per table row

    def sized(self, table: pd.DataFrame, resource: str, risk: float) -> Sized:
        request = table[COLUMNS[resource][2]].to_numpy(dtype=float)
        size = np.full(len(table), np.nan)
        stated = np.full(len(table), np.nan)
        for i, forecast in enumerate(self.forecasts[resource]):
            if forecast is None:
                continue
            known = None if np.isnan(request[i]) else float(request[i])
            found = size_for(
                forecast,
                risk,
                request=known,
                cap_at_request=CAPPED[resource],
                step=STEPS[resource],
            )
            if found is not None:
                size[i], stated[i] = found.size, found.risk
        return Sized(size, stated)


def fit(table: pd.DataFrame, train_on: np.ndarray) -> Learned:
    """Train on the rows ``train_on`` selects; forecast every row from its earlier runs."""
    model = train(table, train_on)
    forecasts = {}
    for resource in model.resources:
        rows = list(runs_with_history(table, resource))
        found = model.forecasts(resource, [r.history for r in rows])
        per_row: list[Forecast | None] = [None] * len(table)
        for run, forecast in zip(rows, found, strict=True):
            per_row[run.index] = forecast
        forecasts[resource] = per_row
    return Learned(model, forecasts)


def add_sizes(result: Replay, learned: Learned, table: pd.DataFrame, sweep: bool) -> None:
    """The default-risk sizes into ``result`` (as ``learned_peak``), and with ``sweep``
    every risk of ``RISKS`` (as ``learned_peak_r<risk>``)."""
    for resource in learned.forecasts:
        result.sizes[(NAME, resource)] = learned.sized(
            table, resource, DEFAULT_RISKS[resource]
        ).size
        if sweep:
            for risk in RISKS:
                result.sizes[(member_name(risk), resource)] = learned.sized(
                    table, resource, risk
                ).size


@dataclass(frozen=True)
class CalibrationRow:
    resource: str
    decile: int
    sizings: int  # (run, risk) pairs in the decile
    stated_min: float
    stated_max: float
    stated_mean: float
    observed: float  # share of them whose peak exceeded the size

    @property
    def ratio(self) -> float | None:
        return None if self.stated_mean == 0 else self.observed / self.stated_mean


def calibration(learned: Learned, table: pd.DataFrame, scored: np.ndarray) -> list[CalibrationRow]:
    """Stated risk against the observed rate, per decile of stated risk and resource."""
    rows = []
    for resource in learned.forecasts:
        peak = table[COLUMNS[resource][0]].to_numpy(dtype=float)
        stated_all, under_all = [], []
        for risk in RISKS:
            sized = learned.sized(table, resource, risk)
            keep = scored & ~np.isnan(sized.stated) & ~np.isnan(peak)
            stated_all.append(sized.stated[keep])
            under_all.append(peak[keep] > sized.size[keep])
        rows += deciles(resource, np.concatenate(stated_all), np.concatenate(under_all))
    return rows


def deciles(resource: str, stated: np.ndarray, under: np.ndarray) -> list[CalibrationRow]:
    """Sizings sorted by stated risk and cut into 10 parts of (nearly) equal count: the
    mean stated risk and the share under-provisioned of each; none under 10 sizings."""
    if len(stated) < 10:
        return []
    order = np.argsort(stated, kind="stable")
    return [
        CalibrationRow(
            resource,
            decile,
            len(part),
            float(stated[part].min()),
            float(stated[part].max()),
            float(stated[part].mean()),
            float(under[part].mean()),
        )
        for decile, part in enumerate(np.array_split(order, 10), 1)
    ]
