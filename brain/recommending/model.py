"""The learned recommender: a calibrated forecast of the next run's peak per resource.

Per resource, on the scale of ``features.target`` (the next peak relative to the
largest recent one, in logs):

- a high quantile of the next peak (``LEVELS``), by gradient-boosted trees with the
  quantile loss, fitted on the oldest ``FIT_SHARE`` of the training runs;
- split-conformal calibration (conformalized quantile regression) on the newest
  runs, which the trees did not see, per history length (no run, 1-2, 3-6, 7 or
  more): the errors ``target - quantile``, sorted. The size at risk ``r`` adds the
  ``ceil((1 - r)(n + 1))``-th smallest of the ``n`` errors to the quantile; the
  risk of a size is ``(errors above its margin + 1) / (n + 1)``. Exchangeability gives
  the stated risk on new runs like the calibration runs; the newest runs calibrate
  because the next runs resemble them most.

The levels were compared out of time on Bitbrains (tuned on July, scored on August):
memory at 0.5% stated risk gave 0.50% at 2.43x with the 0.9 quantile against 0.35%
at 2.62x (0.8) and 0.49% at 2.47x (0.95); a median with a learned spread (normalized
conformal) gave 0.50% at 3.15x. CPU did best with the 0.97 quantile.

Training runs are the runs of the period given; each is described by its earlier
runs only (``features``), so no run is ever sized with itself or a later run.
scikit-learn is imported only to fit; a fitted model predicts with numpy alone
(``trees.FlatTrees``), so serving never imports it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brain.optimizing.sizing import ResourceHistory
from brain.recommending import features as feat
from brain.recommending.trees import FlatTrees

# Lower edges of the history-length groups calibrated apart.
HISTORY_BINS = (0, 1, 3, 7)
# A group with fewer calibration runs uses all of them instead.
MIN_BIN_SCORES = 100
FIT_SHARE = 0.75  # the newest 25% of the training runs calibrate
LEVELS = {"memory": 0.9, "cpu": 0.97, "gpu_memory": 0.9}
# A forecast never exceeds 50x the reference: beyond that the tail is noise.
MAX_LOG_RATIO = math.log(50.0)


def history_bin(runs: int) -> int:
    return max(i for i, edge in enumerate(HISTORY_BINS) if runs >= edge)


@dataclass(frozen=True)
class Forecast:
    """The calibrated distribution of one run's next peak (a ``PeakForecast``)."""

    reference: float
    floor: float
    quantile: float  # the trees' high quantile, on the target scale
    scores: np.ndarray  # sorted calibration errors of the run's history-length group

    def size_at_risk(self, risk: float) -> float | None:
        n = len(self.scores)
        rank = math.ceil((1.0 - risk) * (n + 1))
        if rank > n:
            return None
        value = min(self.quantile + float(self.scores[max(rank, 1) - 1]), MAX_LOG_RATIO)
        return feat.size_of(value, self.reference, self.floor)

    def risk_of(self, size: float) -> float:
        # The tolerance makes the risk of size_at_risk(r) come back as r despite rounding.
        margin = feat.target(size, self.reference, self.floor) - self.quantile + 1e-9
        above = len(self.scores) - int(np.searchsorted(self.scores, margin, side="right"))
        return (above + 1) / (len(self.scores) + 1)


@dataclass
class ResourceModel:
    resource: str
    floor: float
    trees: FlatTrees  # the fitted regressor of the high quantile
    scores: list[np.ndarray]  # per HISTORY_BINS group, sorted
    parts: dict[str, int] = field(default_factory=dict)  # training runs per part

    def forecasts(self, histories: Sequence[ResourceHistory]) -> list[Forecast | None]:
        rows = [feat.features(h, self.floor) for h in histories]
        known = [i for i, row in enumerate(rows) if row is not None]
        found: list[Forecast | None] = [None] * len(histories)
        if not known:
            return found
        x = np.vstack([rows[i] for i in known])
        quantile = self.trees.predict(x)
        for j, i in enumerate(known):
            history = histories[i]
            found[i] = Forecast(
                reference=feat.reference(history),
                floor=self.floor,
                quantile=float(quantile[j]),
                scores=self.scores[history_bin(min(len(history.peaks), feat.MAX_RUNS))],
            )
        return found


@dataclass
class PeakModel:
    """A ``SizingModel``: one ``ResourceModel`` per resource it was trained on."""

    version: str
    trained_at: str  # RFC 3339 UTC
    period_start: str | None  # first and last training run start
    period_end: str | None
    runs: int
    resources: dict[str, ResourceModel]
    figures: dict[str, Any] = field(default_factory=dict)

    def forecast(self, resource: str, history: ResourceHistory) -> Forecast | None:
        return self.forecasts(resource, [history])[0]

    def forecasts(
        self, resource: str, histories: Sequence[ResourceHistory]
    ) -> list[Forecast | None]:
        model = self.resources.get(resource)
        if model is None:
            return [None] * len(histories)
        return model.forecasts(histories)


@dataclass(frozen=True)
class Examples:
    """Training examples of one resource: features, targets, history lengths, start times."""

    x: np.ndarray
    y: np.ndarray
    runs: np.ndarray
    order: np.ndarray  # sort key: start time (ns)


def fit_resource(resource: str, examples: Examples, seed: int = 0) -> ResourceModel | None:
    """Fit and calibrate one resource's model; None with too few examples (under 50)."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from threadpoolctl import threadpool_limits

    n = len(examples.y)
    if n < 50:
        return None
    x = examples.x.copy()
    # A feature no example has (GPU memory's mean use) would break the trees' binning.
    x[:, np.isnan(x).all(axis=0)] = 0.0
    by_time = np.argsort(examples.order, kind="stable")
    fit, calibrate = by_time[: int(n * FIT_SHARE)], by_time[int(n * FIT_SHARE) :]
    trees = HistGradientBoostingRegressor(
        loss="quantile",
        quantile=LEVELS[resource],
        max_iter=150,
        learning_rate=0.08,
        min_samples_leaf=40,
        random_state=seed,
    )
    # One thread: OpenMP threads fighting over two shared cores made a fit 20x slower.
    with threadpool_limits(1, user_api="openmp"):
        trees.fit(x[fit], examples.y[fit])
        errors = examples.y[calibrate] - trees.predict(x[calibrate])
    groups = np.array([history_bin(int(r)) for r in examples.runs[calibrate]])
    pooled = np.sort(errors)
    scores = []
    for group in range(len(HISTORY_BINS)):
        mine = np.sort(errors[groups == group])
        scores.append(mine if len(mine) >= MIN_BIN_SCORES else pooled)
    return ResourceModel(
        resource,
        feat.FLOOR[resource],
        FlatTrees.of(trees),
        scores,
        {"fit": len(fit), "calibration": len(calibrate)},
    )
