"""Gradient-boosted trees as flat numpy arrays: the prediction path of a served model.

scikit-learn's ``HistGradientBoostingRegressor.predict`` walks its ~100-150 trees one
call at a time, each with input checks and an OpenMP region, a fixed cost per tree
that grows when the cores are shared. A job is sized from a handful of rows, so that
per-call overhead is all there is. ``FlatTrees``
holds every node of every tree in a few arrays and walks all trees for all rows at
once, one depth level per numpy step; the result equals scikit-learn's to float
precision (tested). Serving then needs numpy only: scikit-learn is imported to fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Rows walked at once: rows x trees node indices stay small enough to sit in cache.
CHUNK_ROWS = 256


@dataclass(frozen=True)
class FlatTrees:
    """Every node of every tree; ``left``/``right`` are indices into these arrays."""

    baseline: float
    roots: np.ndarray  # index of each tree's root
    feature: np.ndarray
    threshold: np.ndarray  # go left when the value is at most this
    missing_left: np.ndarray  # where a missing (NaN) value goes
    left: np.ndarray
    right: np.ndarray
    is_leaf: np.ndarray
    value: np.ndarray
    depth: int  # the deepest leaf: steps needed to reach every leaf

    @classmethod
    def of(cls, regressor: Any) -> FlatTrees:
        """The trees of a fitted ``HistGradientBoostingRegressor`` (numeric features,
        identity link: the squared-error and quantile losses)."""
        nodes = [predictors[0].nodes for predictors in regressor._predictors]
        if any(n["is_categorical"].any() for n in nodes):
            raise ValueError("categorical splits are not supported")
        offsets = np.cumsum([0] + [len(n) for n in nodes[:-1]])
        every = np.concatenate(nodes)
        shift = np.repeat(offsets, [len(n) for n in nodes])
        return cls(
            baseline=float(np.ravel(regressor._baseline_prediction)[0]),
            roots=offsets.astype(np.int64),
            feature=every["feature_idx"].astype(np.int64),
            threshold=every["num_threshold"].astype(float),
            missing_left=every["missing_go_to_left"].astype(bool),
            left=every["left"].astype(np.int64) + shift,
            right=every["right"].astype(np.int64) + shift,
            is_leaf=every["is_leaf"].astype(bool),
            value=every["value"].astype(float),
            depth=int(every["depth"].max()),
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The prediction for each row of ``x`` (rows x features)."""
        if len(x) > CHUNK_ROWS:
            return np.concatenate(
                [self.predict(x[i : i + CHUNK_ROWS]) for i in range(0, len(x), CHUNK_ROWS)]
            )
        rows = np.arange(len(x))[:, None]
        at = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        for _ in range(self.depth):
            values = x[rows, self.feature[at]]
            go_left = np.where(
                np.isnan(values), self.missing_left[at], values <= self.threshold[at]
            )
            step = np.where(go_left, self.left[at], self.right[at])
            at = np.where(self.is_leaf[at], at, step)
        return self.baseline + self.value[at].sum(axis=1)


def average(forests: list[FlatTrees]) -> FlatTrees:
    """One forest predicting the mean of ``forests``' predictions: their trees side by
    side, every leaf value and the baseline divided by their number."""
    offsets = np.cumsum([0] + [len(f.value) for f in forests[:-1]])
    return FlatTrees(
        baseline=float(np.mean([f.baseline for f in forests])),
        roots=np.concatenate([f.roots + o for f, o in zip(forests, offsets, strict=True)]),
        feature=np.concatenate([f.feature for f in forests]),
        threshold=np.concatenate([f.threshold for f in forests]),
        missing_left=np.concatenate([f.missing_left for f in forests]),
        left=np.concatenate([f.left + o for f, o in zip(forests, offsets, strict=True)]),
        right=np.concatenate([f.right + o for f, o in zip(forests, offsets, strict=True)]),
        is_leaf=np.concatenate([f.is_leaf for f in forests]),
        value=np.concatenate([f.value for f in forests]) / len(forests),
        depth=max(f.depth for f in forests),
    )
