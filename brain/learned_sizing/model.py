"""The learned recommender: a calibrated forecast of the next run's peak per resource.

Per resource, on the scale of ``features.target`` (the next peak relative to the
largest recent one, in logs):

- a high quantile of the next peak, by gradient-boosted trees with the quantile loss;
- cross-conformal calibration by workload: the workloads are dealt into ``FOLDS``
  folds, trees are fitted on all folds but one and their errors ``target - quantile``
  measured on the runs of the fold left out, so every training run gets an error from
  trees that never saw its workload, as a new workload's runs will. The served trees
  are the folds' trees averaged. Errors are grouped by history length (no run, 1-2,
  3-6, 7 or more) and sorted: the size at risk ``r`` adds the
  ``ceil((1 - r)(n + 1))``-th smallest of the group's ``n`` errors to the quantile;
  the risk of a size is ``(errors above its margin + 1) / (n + 1)``;
- the request as a ceiling: memory use rarely exceeds what was provisioned (a VM's
  memory, a container's limit), which the errors on the log scale do not know. The
  probability that the peak exceeds the request is fitted apart, by isotonic
  regression on how far the request lies above the quantile (out-of-fold runs again),
  and is the risk of any size at or above the request.

The quantile level is chosen per resource among ``LEVELS`` on the training runs only:
with the first fold left out, the level whose sizes at ``DESIGN_RISKS`` (the
optimizer's default risks) sum lowest on that fold.

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

from brain.learned_sizing import features as feat
from brain.learned_sizing.trees import FlatTrees, average
from brain.optimizing.sizing_model import ResourceHistory

# Lower edges of the history-length groups calibrated apart.
HISTORY_BINS = (0, 1, 3, 7)
# A group with fewer calibration runs uses all of them instead.
MIN_BIN_SCORES = 100
# Each history-length group is split so by the spread of its recent peaks: a volatile
# workload is calibrated with volatile ones, so the stated risk follows volatility.
SPREAD_GROUPS = 3
SPREAD_FEATURE = feat.NAMES.index("spread")
# Bins of the request's margin whose rate of peaks above the request is counted.
OVER_REQUEST_BINS = 10
FOLDS = 3
# Quantile levels the trees may forecast; each level offered costs one more fit.
LEVELS = (0.8, 0.9, 0.97)
# The risks the level is chosen for: learned_peak's defaults.
DESIGN_RISKS = {"memory": 0.005, "cpu": 0.01, "gpu_memory": 0.04}
# A forecast never exceeds 50x the reference: beyond that the tail is noise.
MAX_LOG_RATIO = math.log(50.0)
REQUEST_FEATURE = feat.NAMES.index("request_rel")


def history_bin(runs: int) -> int:
    return max(i for i, edge in enumerate(HISTORY_BINS) if runs >= edge)


def calibration_group(runs: int, spread: float, spread_edges: np.ndarray) -> int:
    """The group whose errors calibrate a run: its history length and how much its
    recent peaks varied (``SPREAD_GROUPS`` bins; no spread known: the first)."""
    spread_bin = 0 if math.isnan(spread) else int(np.searchsorted(spread_edges, spread))
    return history_bin(min(runs, feat.MAX_RUNS)) * SPREAD_GROUPS + spread_bin


@dataclass(frozen=True)
class Forecast:
    """The calibrated distribution of one run's next peak (a ``PeakForecast``)."""

    reference: float
    floor: float
    quantile: float  # the trees' high quantile, on the target scale
    scores: np.ndarray  # sorted calibration errors of the run's history-length group
    request: float | None = None  # what the run asks for
    over_request: float | None = None  # probability that the peak exceeds ``request``

    def size_at_risk(self, risk: float) -> float | None:
        n = len(self.scores)
        rank = math.ceil((1.0 - risk) * (n + 1))
        size = None
        if rank <= n:
            value = min(self.quantile + float(self.scores[max(rank, 1) - 1]), MAX_LOG_RATIO)
            size = feat.size_of(value, self.reference, self.floor)
        if self._request_holds(risk):
            size = self.request if size is None else min(size, self.request)
        return size

    def risk_of(self, size: float) -> float:
        # The tolerance makes the risk of size_at_risk(r) come back as r despite rounding.
        margin = feat.target(size, self.reference, self.floor) - self.quantile + 1e-9
        above = len(self.scores) - int(np.searchsorted(self.scores, margin, side="right"))
        risk = (above + 1) / (len(self.scores) + 1)
        if self.over_request is not None and size >= self.request:
            return min(risk, self.over_request)
        return risk

    def _request_holds(self, risk: float) -> bool:
        return self.over_request is not None and self.over_request <= risk


@dataclass(frozen=True)
class OverRequest:
    """The probability that a peak exceeds its request, by how far the request lies
    above the quantile (log scale): ``rates[i]`` up to ``edges[i]``, the last beyond."""

    edges: np.ndarray
    rates: np.ndarray

    def at(self, margin: float) -> float:
        return float(self.rates[int(np.searchsorted(self.edges, margin))])


@dataclass
class ResourceModel:
    resource: str
    floor: float
    trees: FlatTrees  # the fitted regressor of the high quantile
    scores: list[np.ndarray]  # per calibration_group, sorted
    spread_edges: np.ndarray  # inner edges of the spread bins
    over_request: OverRequest | None  # None: too few runs with a request
    parts: dict[str, Any] = field(default_factory=dict)  # examples, folds, level

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
            margin = x[j, REQUEST_FEATURE] - quantile[j]
            over = None
            if self.over_request is not None and not math.isnan(margin):
                over = self.over_request.at(margin)
            found[i] = Forecast(
                reference=feat.reference(history),
                floor=self.floor,
                quantile=float(quantile[j]),
                scores=self.scores[
                    calibration_group(len(history.peaks), x[j, SPREAD_FEATURE], self.spread_edges)
                ],
                request=history.request,
                over_request=over,
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
    """Training examples of one resource: features, targets, history lengths, workloads."""

    x: np.ndarray
    y: np.ndarray
    runs: np.ndarray
    workload: np.ndarray  # a number per workload


# Fewer training examples than this and a resource gets no model (sizes fall back).
MIN_EXAMPLES = 50


def fit_resource(resource: str, examples: Examples, seed: int = 0) -> ResourceModel | None:
    """Fit and calibrate one resource's model; None with too few examples."""
    from threadpoolctl import threadpool_limits

    n = len(examples.y)
    if n < MIN_EXAMPLES:
        return None
    x = examples.x.copy()
    # A feature no example has (GPU memory's mean use) would break the trees' binning.
    x[:, np.isnan(x).all(axis=0)] = 0.0
    y = examples.y
    fold = _folds(examples.workload, seed)
    # One thread: OpenMP threads contend for shared cores and slow a fit many times over.
    with threadpool_limits(1, user_api="openmp"):
        first = {level: _fit(x[fold != 0], y[fold != 0], level, seed) for level in LEVELS}
        level = min(
            LEVELS,
            key=lambda lv: _cost(first[lv], x[fold == 0], y[fold == 0], DESIGN_RISKS[resource]),
        )
        forests, quantile = [], np.empty(n)
        for k in range(FOLDS):
            trees = first[level] if k == 0 else _fit(x[fold != k], y[fold != k], level, seed)
            forests.append(trees)
            quantile[fold == k] = trees.predict(x[fold == k])
    errors = y - quantile
    spread = x[:, SPREAD_FEATURE]
    known = spread[~np.isnan(spread)]
    spread_edges = (
        np.quantile(known, np.arange(1, SPREAD_GROUPS) / SPREAD_GROUPS)
        if len(known)
        else np.zeros(SPREAD_GROUPS - 1)
    )
    groups = np.array(
        [
            calibration_group(int(r), v, spread_edges)
            for r, v in zip(examples.runs, spread, strict=True)
        ]
    )
    pooled = np.sort(errors)
    scores = []
    for group in range(len(HISTORY_BINS) * SPREAD_GROUPS):
        mine = np.sort(errors[groups == group])
        scores.append(mine if len(mine) >= MIN_BIN_SCORES else pooled)
    return ResourceModel(
        resource,
        feat.FLOOR[resource],
        average([FlatTrees.of(trees) for trees in forests]),
        scores,
        spread_edges,
        _over_request(x[:, REQUEST_FEATURE] - quantile, y > x[:, REQUEST_FEATURE]),
        {"examples": n, "folds": FOLDS, "level": level},
    )


def _folds(workload: np.ndarray, seed: int) -> np.ndarray:
    """The fold of each example: workloads dealt at random into ``FOLDS`` folds (the
    examples in turn when there are fewer workloads than folds)."""
    ids, of = np.unique(workload, return_inverse=True)
    if len(ids) < FOLDS:
        return np.arange(len(workload)) % FOLDS
    return (np.random.default_rng(seed).permutation(len(ids)) % FOLDS)[of]


def _fit(x: np.ndarray, y: np.ndarray, level: float, seed: int) -> Any:
    """Fitted scikit-learn trees: its compiled predict is the fast one on many rows."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    trees = HistGradientBoostingRegressor(
        loss="quantile",
        quantile=level,
        max_iter=150,
        learning_rate=0.08,
        min_samples_leaf=40,
        random_state=seed,
    )
    return trees.fit(x, y)


def _cost(trees: Any, x: np.ndarray, y: np.ndarray, risk: float) -> float:
    """What sizes at ``risk`` would allocate on held-out runs, relative to each run's
    reference (the quantile plus the held-out errors' conformal margin)."""
    quantile = trees.predict(x)
    errors = np.sort(y - quantile)
    rank = min(math.ceil((1.0 - risk) * (len(errors) + 1)), len(errors))
    return float(np.exp(np.minimum(quantile + errors[rank - 1], MAX_LOG_RATIO)).sum())


def _over_request(margin: np.ndarray, over: np.ndarray) -> OverRequest | None:
    """Per ``OVER_REQUEST_BINS`` equal-count bins of the margin, ``(peaks above the
    request + 1) / (runs + 1)`` (never stated below what the runs can show), made
    non-increasing in the margin by keeping the larger rate of any wider margin."""
    known = ~np.isnan(margin)
    if known.sum() < MIN_BIN_SCORES:
        return None
    order = np.argsort(margin[known], kind="stable")
    bins = np.array_split(order, OVER_REQUEST_BINS)
    known_margin, known_over = margin[known], over[known]
    rates = np.array([(known_over[b].sum() + 1) / (len(b) + 1) for b in bins])
    edges = np.array([known_margin[b].max() for b in bins[:-1]])
    return OverRequest(edges, np.maximum.accumulate(rates[::-1])[::-1])
