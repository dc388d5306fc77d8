"""The calibration table: stated risk against the observed rate, per decile."""

from __future__ import annotations

import numpy as np
import pytest

from brain.lab.backtest.learned import deciles


def test_deciles_of_stated_risk_with_their_observed_rates():
    # 100 sizings: stated 1% for the first 50, 10% for the others; of the 1% ones, 1 of
    # the first 10 was under-provisioned; of the 10% ones, 3 in each 10
    stated = np.array([0.01] * 50 + [0.10] * 50)
    under = np.zeros(100, dtype=bool)
    under[3] = True
    for start in range(50, 100, 10):
        under[start : start + 3] = True
    rows = deciles("memory", stated, under)
    assert [r.sizings for r in rows] == [10] * 10
    assert [r.stated_mean for r in rows] == pytest.approx([0.01] * 5 + [0.10] * 5)
    assert [r.observed for r in rows] == pytest.approx([0.1, 0, 0, 0, 0] + [0.3] * 5)
    # observed / stated: 10x too many in decile 1, 3x in the upper half
    assert rows[0].ratio == pytest.approx(10.0) and rows[9].ratio == pytest.approx(3.0)
    assert rows[1].ratio == 0.0
    assert deciles("memory", stated[:9], under[:9]) == []  # under 10 sizings: no table
