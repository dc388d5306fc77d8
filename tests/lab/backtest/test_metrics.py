"""The figures on a tiny trace whose answers are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from brain.lab.backtest.baselines import LastRunsRule, RequestAsGiven
from brain.lab.backtest.engine import replay
from brain.lab.backtest.metrics import evaluate, figures
from tests.builders.traces import trace

# One workload, requests 1000 MiB and 2 cores. Days 1-4 last 24 h (288 x 5 min), day 5
# lasts 12 h (144 samples).
RUNS = trace(
    [
        {"workload": "a", "day": "2024-01-01", "mem_max": 100, "cpu_p95": 0.5},
        {"workload": "a", "day": "2024-01-02", "mem_max": 200, "cpu_p95": 1.0},
        {"workload": "a", "day": "2024-01-03", "mem_max": 150, "cpu_p95": 0.8},
        {"workload": "a", "day": "2024-01-04", "mem_max": 400, "cpu_p95": 2.5},
        {"workload": "a", "day": "2024-01-05", "mem_max": 300, "cpu_p95": 1.2, "samples": 144},
    ]
)
MAX_LAST_2 = LastRunsRule("max", 2, 1.0)


def rows_by_key(min_history: int = 2):
    result = replay(RUNS, [RequestAsGiven(), MAX_LAST_2])
    return {(r.name, r.resource): r for r in evaluate(RUNS, result, min_history)}


def test_simple_rule_memory_figures_match_the_hand_computation():
    # max of the last 2 peaks: run 0 has no history (no opinion: the request, 1000),
    # run 1 -> 100, run 2 -> 200, run 3 -> max(200, 150) = 200, run 4 -> max(150, 400) = 400.
    row = rows_by_key()[("max_last2_x1", "memory")]
    warm = row.warm  # runs 2, 3, 4: sizes 200, 200, 400 against peaks 150, 400, 300
    assert warm.runs == 3
    assert warm.under_rate == pytest.approx(1 / 3)  # run 3: 400 > 200
    assert warm.slack_mean == pytest.approx((50 / 200 + 100 / 400) / 2)  # 0.25
    assert warm.alloc_used == pytest.approx(800 / 850)
    # resource-hours: 200*24 + 200*24 + 400*12 = 14400 against 1000*(24+24+12) = 60000
    assert warm.resource_hours_change == pytest.approx(14400 / 60000 - 1)
    assert warm.fallback_runs == 0
    cold = row.cold_start  # runs 0, 1: sizes 1000 (fallback), 100 against peaks 100, 200
    assert cold.runs == 2
    assert cold.under_rate == pytest.approx(0.5)
    assert cold.slack_mean == pytest.approx(0.9)  # run 0 only: (1000 - 100) / 1000
    assert cold.alloc_used == pytest.approx(1100 / 300)
    assert cold.resource_hours_change == pytest.approx(1100 * 24 / (2000 * 24) - 1)
    assert cold.fallback_runs == 1


def test_cpu_is_judged_on_the_95th_percentile():
    # sizes: run 2 max(0.5, 1.0) = 1.0, run 3 max(1.0, 0.8) = 1.0, run 4 max(0.8, 2.5) = 2.5;
    # p95: 0.8, 2.5, 1.2 -> run 3 throttled; slack (0.2/1.0 + 1.3/2.5) / 2 = 0.36
    warm = rows_by_key()[("max_last2_x1", "cpu")].warm
    assert warm.under_rate == pytest.approx(1 / 3)
    assert warm.slack_mean == pytest.approx(0.36)
    assert warm.alloc_used == pytest.approx(4.5 / 4.5)
    # 1.0*24 + 1.0*24 + 2.5*12 = 78 against 2*(24+24+12) = 120
    assert warm.resource_hours_change == pytest.approx(78 / 120 - 1)


def test_the_request_as_given_changes_no_resource_hours():
    warm = rows_by_key()[("request", "memory")].warm
    assert warm.under_rate == 0.0
    assert warm.slack_mean == pytest.approx((850 / 1000 + 600 / 1000 + 700 / 1000) / 3)
    assert warm.alloc_used == pytest.approx(3000 / 850)
    assert warm.resource_hours_change == pytest.approx(0.0)


def test_min_history_moves_runs_between_warm_and_cold():
    rows = rows_by_key(min_history=4)
    assert rows[("request", "memory")].warm.runs == 1
    assert rows[("request", "memory")].cold_start.runs == 4


def test_a_zero_size_fitting_a_zero_peak_has_no_slack_and_empty_parts_have_no_figures():
    one = np.array([0.0, 2.0])
    result = figures(one, np.array([0.0, 1.0]), np.array([4.0, 4.0]), np.ones(2), np.zeros(2, bool))
    assert result.under_rate == 0.0
    assert result.slack_mean == pytest.approx((0.0 + 0.5) / 2)
    empty = figures(*(np.array([]) for _ in range(4)), np.array([], dtype=bool))
    assert empty.runs == 0 and empty.under_rate is None and empty.alloc_used is None
