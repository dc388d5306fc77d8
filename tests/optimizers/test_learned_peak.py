"""learned_peak: sizes at a stated risk with the model from the context, the same sizes as
the backtest measures, and learned_margin's without a model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from brain.lab.backtest.learned import Learned
from brain.lab.backtest.learned import fit as fit_learned
from brain.learned_sizing import store
from brain.replay import adapters
from brain.replay.runs import runs_of
from brain.retraining.service import load
from optimizers.learned_margin import LearnedMarginOptimizer
from optimizers.learned_peak import LearnedPeakOptimizer, LearnedPeakSettings
from tests.builders.traces import random_runs
from tests.commands import run_command


@pytest.fixture(scope="module")
def trained() -> tuple[pd.DataFrame, Learned]:
    table = random_runs()
    return table, fit_learned(table, np.ones(len(table), dtype=bool))


def test_the_optimizer_sizes_exactly_as_the_backtest_measures(trained):
    table, learned = trained
    optimizer = LearnedPeakOptimizer()
    recommender = adapters.OptimizerRecommender(
        "learned_peak",
        optimizer,
        {"memory": adapters.memory_mib, "cpu": adapters.cpu},
        sizing_model=learned.model,
    )
    memory = learned.sized(table, "memory", 0.005).size
    cpu = learned.sized(table, "cpu", 0.01).size
    by_workload: dict[str, list] = {}
    for run in runs_of(table):
        by_workload.setdefault(run.submission.workload, []).append(run)
    checked = 0
    for workload in ("w0", "w1"):
        for position, run in enumerate(by_workload[workload]):
            sizes = recommender.recommend(run.submission, by_workload[workload][:position])
            assert sizes["memory"] == pytest.approx(memory[run.index])
            assert sizes["cpu"] == pytest.approx(cpu[run.index])
            checked += 1
    assert checked == 24


def test_without_a_model_it_proposes_what_learned_margin_does(trained):
    table, _ = trained
    runs = [r for r in runs_of(table) if r.submission.workload == "w3"]
    without = adapters.OptimizerRecommender(
        "x", LearnedPeakOptimizer(), {"memory": adapters.memory_mib, "cpu": adapters.cpu}
    )
    margin = adapters.OptimizerRecommender(
        "y", LearnedMarginOptimizer(), {"memory": adapters.memory_mib, "cpu": adapters.cpu}
    )
    assert without.recommend(runs[5].submission, runs[:5]) == margin.recommend(
        runs[5].submission, runs[:5]
    )


def test_a_lower_risk_never_gives_a_smaller_size(trained):
    table, learned = trained
    safer = learned.sized(table, "memory", 0.01).size
    riskier = learned.sized(table, "memory", 0.2).size
    known = ~np.isnan(safer) & ~np.isnan(riskier)
    assert known.sum() > 400 and (safer[known] >= riskier[known]).all()
    assert LearnedPeakSettings().memory_risk == 0.005


def test_brain_train_stores_a_version_that_serve_loads(tmp_path, capsys):
    trace = tmp_path / "runs.csv"
    random_runs(workloads=10, runs=8).assign(day=lambda t: t["start"].dt.strftime("%Y-%m-%d")).drop(
        columns=["start", "seq", "duration_h"]
    ).assign(samples=288).to_csv(trace, index=False)
    assert run_command("train", ["--trace", str(trace), "--model-dir", str(tmp_path / "m")]) == 0
    assert "stored" in capsys.readouterr().out
    stored = store.newest(tmp_path / "m")
    assert stored.meta["runs"] == 80
    assert stored.meta["period_start"] == "2024-01-01T00:00:00Z"
    assert stored.meta["period_end"] == "2024-01-08T00:00:00Z"
    assert load(tmp_path / "m").current.version == stored.version
    assert load(tmp_path / "empty").current is None
