"""Out-of-time validation: knobs chosen on one period, figures reported on another."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from brain.lab.backtest.metrics import Curve, CurvePoint, Figures
from brain.lab.backtest.periods import PeriodError, parse_period
from brain.lab.backtest.runner import Options, backtest
from brain.lab.backtest.tuning import choose, dominance
from brain.optimizing import OptimizerRegistry
from tests.builders.traces import trace
from tests.commands import run_command


def test_periods_are_ranges_months_or_days_with_the_end_excluded():
    july = parse_period("2013-07")
    starts = pd.Series(
        pd.to_datetime(["2013-06-30T23:59", "2013-07-01T00:00", "2013-08-01T00:00"], utc=True)
    )
    assert july.mask(starts).tolist() == [False, True, False]
    assert parse_period("2013-07-02").mask(starts).tolist() == [False, False, False]
    assert parse_period("..2013-07-01").mask(starts).tolist() == [True, False, False]
    assert parse_period("2013-07-01T00:00:00Z..").mask(starts).tolist() == [False, True, True]
    assert july.overlaps(parse_period("2013-07-31..2013-09"))
    assert not july.overlaps(parse_period("2013-08"))
    for bad in ("July", "2013-08..2013-07", "x..2013-07"):
        with pytest.raises(PeriodError):
            parse_period(bad)


def figures(under: float, alloc: float) -> Figures:
    return Figures(100, under, 0.5, alloc, 0.0, 0)


def test_the_cheapest_knob_meeting_the_target_is_chosen_else_the_safest():
    points = [(1.0, figures(0.02, 1.2)), (1.5, figures(0.004, 1.9)), (2.0, figures(0.001, 2.4))]
    assert choose(points, 0.005) == 1.5
    assert choose(points, 0.05) == 1.0
    assert choose(points, 0.0001) == 2.0  # none meets it: the lowest under-provisioning
    assert choose([], 0.01) is None


def test_dominance_counts_rule_points_beaten_on_both_axes():
    mine = Curve("learned_margin", "safety", "memory", (CurvePoint(1, 2.0, 0.01),))
    rule = Curve(
        "max_last7",
        "margin",
        "memory",
        (CurvePoint(1.0, 2.1, 0.02), CurvePoint(1.5, 1.9, 0.005), CurvePoint(2.0, 2.0, 0.01)),
    )
    (found,) = dominance([mine, rule], "learned_margin")
    # 2.1x at 2% is beaten; 1.9x is cheaper; 2.0x at 1% is a tie on both axes, not beaten
    assert (found.beaten, found.total) == (1, 3)
    assert found.unbeaten == ("max_last7 margin=1.5", "max_last7 margin=2")


def two_months() -> pd.DataFrame:
    """Workload a, 3 runs in January then 3 in February; memory peaks 100, 100, 100
    (January) then 100, 130, 100 (February); 1000 MiB requested."""
    peaks = {"2024-01-01": 100, "2024-01-02": 100, "2024-01-03": 100}
    peaks |= {"2024-02-01": 100, "2024-02-02": 130, "2024-02-03": 100}
    return trace([{"workload": "a", "day": day, "mem_max": p} for day, p in peaks.items()])


def test_scored_figures_cover_only_the_scored_runs_but_history_spans_both():
    options = Options(
        min_history=1, tune_on=parse_period("2024-01"), score_on=parse_period("2024-02")
    )
    outcome = backtest(two_months(), OptimizerRegistry(), options)
    assert outcome.scored_runs == 3
    rows = {(r.name, r.resource): r for r in outcome.rows}
    rule = rows[("max_last7_x1.15", "memory")].warm
    # February sized from every earlier run: max 100 x 1.15 = 115 for 2024-02-01 (fits),
    # 115 for 2024-02-02 (130: under), max 130 x 1.15 = 149.5 for 2024-02-03
    assert rule.runs == 3 and rule.under_rate == pytest.approx(1 / 3)
    assert rule.alloc_used == pytest.approx((115 + 115 + 149.5) / 330)


def test_a_knob_is_chosen_on_the_tuning_period_and_reported_on_the_scored_one():
    options = Options(
        min_history=1,
        tune_on=parse_period("2024-01"),
        score_on=parse_period("2024-02"),
        targets={"memory": 0.0},
    )
    outcome = backtest(two_months(), OptimizerRegistry(), options)
    choice = next(c for c in outcome.choices if c.family == "max_last7" and c.resource == "memory")
    # January's two warm runs (peaks 100 after 100) fit at every margin >= 1: the cheapest, 1.0
    assert choice.value == 1.0 and choice.tuned.under_rate == 0.0
    assert choice.tuned.runs == 2
    # ...and in February margin 1.0 misses 130 only: sizes 100, 100, 130
    assert choice.scored.under_rate == pytest.approx(1 / 3)
    assert choice.scored.alloc_used == pytest.approx(330 / 330)
    names = [r.name for r in outcome.rows if r.resource == "memory"]
    assert "max_last7 tuned margin=1" in names


def test_the_cli_labels_its_scope_and_refuses_overlapping_periods(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    rows = ["workload,day,samples,req_cpu,req_memory_mib,cpu_mean,cpu_p95,cpu_max,mem_mean,mem_max"]
    for day, peak in zip(
        ("2024-01-01", "2024-01-02", "2024-01-03", "2024-02-01", "2024-02-02", "2024-02-03"),
        (100, 100, 100, 100, 130, 100),
        strict=True,
    ):
        rows.append(f"a,{day},288,2,1000,0.1,0.5,0.6,50,{peak}")
    path.write_text("\n".join(rows) + "\n")
    assert run_command("backtest", ["--trace", str(path), "--quiet", "--min-history", "1"]) == 0
    assert capsys.readouterr().out.startswith("in-sample: all runs")
    argv = ["--trace", str(path), "--quiet", "--min-history", "1", "--tune-on", "2024-01"]
    assert run_command("backtest", [*argv, "--score-on", "2024-02"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("out of time: knobs tuned on 2024-01, scored on 2024-02")
    assert "knobs chosen on the tuning period" in out
    assert run_command("backtest", [*argv, "--score-on", "2024-02", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["in_sample"] is False and report["scored_runs"] == 3
    assert {c["family"] for c in report["choices"]} >= {"max_last7", "p90_last7"}
    assert run_command("backtest", [*argv, "--score-on", "2024-01-15..2024-03"]) == 2
    assert "overlaps" in capsys.readouterr().err
    assert run_command("backtest", argv) == 2
    assert "--tune-on needs --score-on" in capsys.readouterr().err
    assert run_command("backtest", [*argv, "--score-on", "2024-02", "--target", "disk=0.1"]) == 2
