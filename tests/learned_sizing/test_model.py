"""The learned recommender: features without leakage, conformal arithmetic, calibration,
versioned storage."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import numpy as np
import pytest

from brain.learned_sizing import features as feat
from brain.learned_sizing import store
from brain.learned_sizing.model import LEVELS, Forecast, OverRequest, _over_request
from brain.learned_sizing.risk_sizing import size_for
from brain.learned_sizing.training import runs_with_history, train
from brain.optimizing.sizing_model import ResourceHistory
from tests.builders.traces import daily_runs, random_memory_runs


def history(peaks, request=1000.0) -> ResourceHistory:
    n = len(peaks)
    return ResourceHistory(
        peaks=peaks,
        means=[p / 2 for p in peaks],
        requests=[request] * n,
        durations_h=[24.0] * n,
        request=request,
    )


def test_features_are_relative_to_the_largest_recent_peak():
    row = feat.features(history([100.0, 300.0, 200.0]), floor=0.0)
    named = dict(zip(feat.NAMES, row, strict=True))
    assert named["runs"] == 3
    assert named["log_reference"] == pytest.approx(math.log(300))
    assert named["last_rel"] == pytest.approx(math.log(200 / 300))
    assert named["median_rel"] == pytest.approx(math.log(200 / 300))
    assert named["min_rel"] == pytest.approx(math.log(100 / 300))
    assert named["request_rel"] == pytest.approx(math.log(1000 / 300))
    assert named["request_change"] == 0.0
    # run 2 (300) outgrew run 1 (100); run 3 (200) did not: 1 of 2
    assert named["outgrow_rate"] == 0.5
    assert named["last_mean_over_peak"] == pytest.approx(0.5)
    # no run: the request is the reference and the history features are missing
    cold = dict(zip(feat.NAMES, feat.features(history([]), floor=0.0), strict=True))
    assert cold["log_reference"] == pytest.approx(math.log(1000))
    assert math.isnan(cold["last_rel"]) and cold["runs"] == 0
    assert feat.features(history([], request=None), floor=0.0) is None


def test_a_run_is_sized_only_from_earlier_runs_of_its_workload():
    runs = daily_runs({"a": [10.0, 20.0, 30.0, 40.0], "b": [1.0, 2.0]})
    seen = {(r.index, tuple(r.history.peaks)) for r in runs_with_history(runs, "memory")}
    assert seen == {
        (0, ()),
        (1, (10.0,)),
        (2, (10.0, 20.0)),
        (3, (10.0, 20.0, 30.0)),
        (4, ()),
        (5, (1.0,)),
    }
    # changing a run and everything after it changes nothing its forecast is built from
    changed = daily_runs({"a": [10.0, 20.0, 999.0, 999.0], "b": [1.0, 2.0]})
    before = {r.index: r.history for r in runs_with_history(runs, "memory")}
    after = {r.index: r.history for r in runs_with_history(changed, "memory")}
    assert all(before[i] == after[i] for i in (0, 1, 2))


def test_size_and_risk_follow_the_calibration_errors():
    # quantile 0 on the log scale, reference 100, floor 0: errors -0.1, 0, 0.1, 0.2
    forecast = Forecast(100.0, 0.0, 0.0, np.array([-0.1, 0.0, 0.1, 0.2]))
    # risk 0.4: the ceil(0.6 x 5) = 3rd smallest error, 0.1 -> 100 e^0.1
    assert forecast.size_at_risk(0.4) == pytest.approx(100 * math.exp(0.1))
    # one error (0.2) lies above it: (1 + 1) / 5
    assert forecast.risk_of(100 * math.exp(0.1)) == pytest.approx(0.4)
    assert forecast.risk_of(100 * math.exp(0.3)) == pytest.approx(0.2)  # never below 1/(n+1)
    assert forecast.size_at_risk(0.1) is None  # 4 errors cannot promise 10%
    # the size is rounded up, then capped at the request, and its risk restated
    found = size_for(forecast, 0.4, request=108.0, cap_at_request=True, step=1.0)
    assert (found.size, found.capped) == (108.0, True)  # 110.5 -> 111 > 108: capped
    assert found.risk == pytest.approx(forecast.risk_of(108.0))
    uncapped = size_for(forecast, 0.4, request=108.0, cap_at_request=False, step=1.0)
    assert uncapped.size == 111.0
    # no promise possible: the request stands
    assert size_for(forecast, 0.1, request=500.0, cap_at_request=True, step=1.0).size == 500.0


def test_the_stated_risk_holds_on_runs_the_model_never_saw():
    model = train(random_memory_runs(150, 20, seed=1), now=datetime(2026, 1, 1, tzinfo=UTC))
    fresh = random_memory_runs(150, 20, seed=2)
    runs = [r for r in runs_with_history(fresh, "memory") if len(r.history.peaks) >= 3]
    forecasts = model.forecasts("memory", [r.history for r in runs])
    peaks = np.array([r.peak for r in runs])
    for risk in (0.2, 0.1, 0.05):
        sizes = np.array([f.size_at_risk(risk) for f in forecasts])
        observed = float((peaks > sizes).mean())
        # 2,550 fresh runs: within a factor 1.5 of the stated risk
        assert risk / 1.5 < observed < risk * 1.5, (risk, observed)


def test_models_are_versioned_and_the_newest_is_loaded(tmp_path):
    runs = random_memory_runs(40, 10, seed=3)
    older = train(runs, now=datetime(2026, 1, 1, tzinfo=UTC))
    newer = train(runs, now=datetime(2026, 1, 2, tzinfo=UTC))
    store.save(newer, tmp_path)
    store.save(older, tmp_path)
    found = store.newest(tmp_path)
    assert found.version == "20260102T000000Z"
    assert found.meta["runs"] == 400 and found.meta["period_start"] == "2024-01-01T00:00:00Z"
    # every run is an example (a first run is sized from its request), calibrated out of fold
    parts = found.meta["resources"]["memory"]["parts"]
    assert (parts["examples"], parts["folds"]) == (400, 3) and parts["level"] in LEVELS
    loaded = store.load_newest(tmp_path)
    probe = history([1000.0, 1200.0, 900.0])
    assert loaded.forecast("memory", probe).size_at_risk(0.05) == newer.forecast(
        "memory", probe
    ).size_at_risk(0.05)
    # a broken newest model is not loaded: the caller falls back
    found.model_path.write_bytes(b"not a pickle")
    assert store.load_newest(tmp_path) is None
    assert store.load_newest(tmp_path / "absent") is None


def test_a_model_file_of_another_format_is_skipped(tmp_path):
    model = train(random_memory_runs(40, 10, seed=3), now=datetime(2026, 1, 1, tzinfo=UTC))
    stored = store.save(model, tmp_path)
    meta_path = stored.model_path.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    assert meta["format"] == store.FORMAT
    # a file written before the trees were stored as arrays: not loaded, the caller falls back
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "format"}))
    assert store.newest(tmp_path) is None


def test_the_request_is_a_ceiling_with_its_own_risk():
    # errors -0.1, 0, 0.1, 0.2 around quantile 0 (reference 100): 2 of 4 lie above the
    # margin of any size between 100 e^0 and 100 e^0.1; the request, 108, lies there, and
    # peaks above their request are rarer: 1%
    forecast = Forecast(
        100.0, 0.0, 0.0, np.array([-0.1, 0.0, 0.1, 0.2]), request=108.0, over_request=0.01
    )
    assert forecast.risk_of(107.0) == pytest.approx(3 / 5)  # (2 + 1) / (4 + 1)
    assert forecast.risk_of(108.0) == 0.01  # at the request: min(3/5, 1%)
    # 4 errors cannot promise 5%, but the request can: it is the size at 5%
    assert forecast.size_at_risk(0.05) == 108.0
    assert forecast.size_at_risk(0.005) is None  # neither can promise 0.5%
    # at 40% the errors ask 100 e^0.1 = 110.5, the request suffices: 108
    assert forecast.size_at_risk(0.4) == 108.0
    # at 60% the errors' size (100 e^0 = 100) is below the request and stays
    assert forecast.size_at_risk(0.6) == pytest.approx(100.0)


def test_over_request_rates_per_margin_bin_never_rise_with_the_margin():
    # 1,000 runs, margins 0..999; in the lowest 100 margins 9 runs exceeded their request,
    # in the next 100 none, in the third 100 four (more than the second: the second is
    # raised to it), none above
    margin = np.arange(1000.0)
    over = np.zeros(1000, dtype=bool)
    over[[0, 10, 20, 30, 40, 50, 60, 70, 80]] = True
    over[[200, 210, 220, 230]] = True
    found = _over_request(margin, over)
    assert found.edges.tolist() == [99.0, 199.0, 299.0, 399.0, 499.0, 599.0, 699.0, 799.0, 899.0]
    assert found.at(5.0) == pytest.approx(10 / 101)  # (9 + 1) / (100 + 1)
    assert found.at(150.0) == pytest.approx(5 / 101)  # (0 + 1) / 101 raised to (4 + 1) / 101
    assert found.at(250.0) == pytest.approx(5 / 101)
    assert found.at(950.0) == pytest.approx(1 / 101)  # none above: never stated as zero
    assert isinstance(found, OverRequest)
    assert _over_request(margin[:99], over[:99]) is None  # too few runs to say
