"""The flat-array trees predict what scikit-learn's trees predict."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from brain.learned_sizing.trees import FlatTrees


def test_flat_trees_equal_scikit_learn_with_missing_values():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 4))
    x[rng.random(x.shape) < 0.15] = np.nan  # missing values are routed by each split
    y = np.nan_to_num(x[:, 0]) * 2 + np.isnan(x[:, 1]) + rng.normal(0, 0.1, 2000)
    fitted = HistGradientBoostingRegressor(
        loss="quantile", quantile=0.9, max_iter=40, random_state=0
    ).fit(x, y)
    probe = rng.normal(size=(500, 4))
    probe[rng.random(probe.shape) < 0.15] = np.nan
    flat = FlatTrees.of(fitted)
    assert len(flat.roots) == fitted.n_iter_ == 40
    assert flat.predict(probe) == pytest.approx(fitted.predict(probe), abs=1e-12)
    # one row alone, as when a job with one role is sized
    assert flat.predict(probe[:1]) == pytest.approx(fitted.predict(probe[:1]), abs=1e-12)


def test_a_single_leaf_tree_predicts_its_value():
    # a constant target: every tree is one leaf, the prediction the baseline
    fitted = HistGradientBoostingRegressor(max_iter=3).fit(
        np.arange(100.0)[:, None], np.full(100, 7.0)
    )
    assert FlatTrees.of(fitted).predict(np.array([[5.0], [np.nan]])) == pytest.approx([7.0, 7.0])
