"""The recommenders of the loop replay on series worked out by hand: the baselines and
Brain's default pipeline (create, running and OOM stages)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from brain.config import Settings
from brain.domain import Stage
from brain.lab.backtest.baselines import LastRunsRule
from brain.lab.backtest.loop.baselines import (
    AutopilotLoop,
    OneShotLoop,
    VpaLoop,
    VpaPolicy,
    oom_bump,
    running_quantiles,
)
from brain.optimizing import load_registry
from brain.optimizing.pipeline import run_stage
from brain.replay.brain_policy import BrainLoop
from brain.replay.harness import Allocation, HarnessSettings, run_samples, simulate
from brain.replay.runs import runs_of
from brain.replay.screen import candidates, window_peaks
from brain.replay.series import attach
from tests.builders.traces import trace

DAY = 86400
START = int(pd.Timestamp("2024-01-01", tz="UTC").timestamp())


def one_workload(days: list[dict], series: list[list[tuple[int, float, float]]], sample_s=300.0):
    """A run table of one workload ``w`` (one row per day) and its series: per day,
    (seconds into the day, cpu, mem_mib) samples."""
    table = trace(
        [{"workload": "w", "day": f"2024-01-0{i + 1}", **row} for i, row in enumerate(days)]
    )
    rows = [
        {"workload": "w", "ts": START + i * DAY + s, "cpu": cpu, "mem_mib": mem}
        for i, day in enumerate(series)
        for s, cpu, mem in day
    ]
    return table, attach(table, pd.DataFrame(rows), period_s=DAY, sample_s=sample_s)


def test_the_series_attaches_to_the_run_of_its_day_and_nothing_else():
    table, series = one_workload(
        [{}, {}], [[(300, 1.0, 10.0), (600, 1.0, 20.0)], [(300, 1.0, 30.0)]]
    )
    assert series.bounds(0) == (0, 2) and series.bounds(1) == (2, 3)
    assert series.mem.tolist() == [10.0, 20.0, 30.0]


def test_vpa_histogram_percentiles_grow_with_the_run():
    # Buckets with edges 1, 2, 4, 8: history {1, 1, 2}; the run adds 8, then 8.
    # k=0: counts [2,1,0,1] -> p50 bucket 0 (edge 1), p90 (3.6 of 4) bucket 3 (8).
    # k=1: counts [2,1,0,2] -> p50 (2.5 of 5) bucket 1 (edge 2), p90 bucket 3.
    found = running_quantiles(
        np.array([1.0, 1.0, 2.0]), np.array([8.0, 8.0]), np.array([1.0, 2.0, 4.0, 8.0]), (0.5, 0.9)
    )
    assert found.tolist() == [[1.0, 8.0], [2.0, 8.0]]


def test_vpa_relaunches_at_its_target_when_the_allocation_leaves_its_bounds():
    run = run_samples_of([100.0, 100.0, 100.0])
    # Per sample p50, p90, p95 of memory; CPU inside its bounds throughout.
    memory = np.array([[100.0, 200.0, 300.0], [100.0, 200.0, 300.0], [400.0, 500.0, 600.0]])
    cpu = np.tile([1.0, 1.0, 1.0], (3, 1))
    policy = VpaPolicy(run, memory, cpu, margin=1.0, start=Allocation(250.0, 1.0))
    change = policy.next_change(0, 3, Allocation(250.0, 1.0))
    assert change is not None and change.at == 2 and change.restarts
    assert change.allocation == Allocation(500.0, 1.0)
    # An OOM kill bumps memory by max(+100 MiB, x 1.2), and the bump is a floor after.
    assert policy.on_oom(1, Allocation(1000.0, 1.0)) == Allocation(1200.0, 1.0)
    assert oom_bump(100.0) == 200.0
    assert policy.next_change(2, 3, Allocation(1200.0, 1.0)) is None  # 1200 <= floor


def run_samples_of(mem, cpu=None, sample_s=300):
    table, series = one_workload(
        [{}], [[(sample_s * (i + 1), (cpu or [0.1] * len(mem))[i], m) for i, m in enumerate(mem)]]
    )
    return run_samples(series, 0, HarnessSettings())


def test_vpa_starts_at_the_history_p90_times_its_margin():
    # Yesterday 100 MiB x 9 and 1000 MiB: the p90 of 10 samples (the 9th) is in 100's
    # bucket, whose upper edge is the first 1.05^n >= 100: 1.05^95 = 103.03...
    yesterday = [(300 * (i + 1), 0.5, 100.0) for i in range(9)] + [(3000, 0.5, 1000.0)]
    table, series = one_workload([{}, {}], [yesterday, [(300, 0.5, 100.0)]])
    runs = runs_of(table)
    samples = run_samples(series, 1, HarnessSettings())
    policy = VpaLoop(1.5).policy(runs[1], runs[:1], samples, series)
    assert policy.start().memory_mib == pytest.approx(1.05**95 * 1.5)


def test_a_one_shot_rule_falls_back_to_the_request_after_an_oom_kill():
    # Peaks 100 and 200 MiB: max of the last 7 x 1.5 = 300 MiB; the run reaches 400.
    table, series = one_workload(
        [{"mem_max": 100}, {"mem_max": 200}, {"req_memory_mib": 1000}],
        [[(300, 0.1, 100.0)], [(300, 0.1, 200.0)], [(300, 0.1, 100.0), (600, 0.1, 400.0)]],
    )
    runs = runs_of(table)
    rule = OneShotLoop(LastRunsRule("max", 7, 1.5))
    samples = run_samples(series, 2, HarnessSettings())
    policy = rule.policy(runs[2], runs[:2], samples, series)
    assert policy.start().memory_mib == pytest.approx(300.0)
    outcome = simulate(samples, policy, HarnessSettings())
    assert outcome.ooms == 1
    assert outcome.memory_peak_alloc_mib == 1000.0


def test_the_moving_window_follows_the_recent_peak_in_place():
    # Hourly samples; window 2 h, margin 1.0. Day 1 ends at 02:00 with 300 MiB, far from
    # day 2's first sample: day 2 starts at its request (1000 MiB). The decision at 01:00
    # holds the last 2 h's peak, 200; 02:00 uses 500 > 200: killed, bumped to
    # max(200 + 100, 200 x 1.2) = 300 (a floor from then on); the decision at 03:00 sees
    # 500 (02:00) in its window: 500 for 04:00; the one at 04:00 (window 100, 100) goes
    # back to the floor, 300. Resizes in place: only the kill restarts.
    day2 = [(3600, 0.1, 200.0), (7200, 0.1, 500.0), (10800, 0.1, 100.0), (14400, 0.1, 100.0)]
    table, series = one_workload(
        [{}, {"req_memory_mib": 1000}],
        [[(3600, 0.1, 100.0), (7200, 0.1, 300.0)], day2],
        sample_s=3600.0,
    )
    runs = runs_of(table)
    loop = AutopilotLoop(window_h=2.0, margin=1.0)
    loop.prepare(series, [0])
    harness = HarnessSettings(cadence_s=3600)
    samples = run_samples(series, 1, harness)
    policy = loop.policy(runs[1], runs[:1], samples, series)
    assert policy.start() == Allocation(1000.0, 2.0)
    outcome = simulate(samples, policy, harness)
    assert outcome.memory_gib_h == pytest.approx((1000 + 200 + 300 + 500) / 1024)
    assert (outcome.resizes, outcome.restarts, outcome.ooms) == (3, 1, 1)
    # With a 24 h window the previous day's peak (300 MiB) is the start.
    wide = AutopilotLoop(window_h=24.0, margin=1.0)
    wide.prepare(series, [0])
    assert wide.policy(runs[1], runs[:1], samples, series).start().memory_mib == 300.0


def brain() -> BrainLoop:
    return BrainLoop(load_registry(), Settings())


def test_brain_migrates_before_an_oom_then_answers_a_kill_with_oom_recovery():
    # A first run (no history): the create stage's startup gives the worker its default
    # 8192 MiB and 8 cores, or the ask if larger: 10000 MiB, 8 cores.
    # Sample 3 (1200 s) uses 9500 >= 90 % of 10000, and the trend of samples 0-3 (1000,
    # 1000, 1000, 9500 at -900..0 s: slope 8.5 MiB/s, 6950 at 0) reaches 12050 in 600 s:
    # oom_risk migrates to 12050 x 1.2 = 14460 MiB from sample 4. Sample 5 uses
    # 15000 > 14460: killed; oom_recovery doubles it to 28920 MiB.
    mem = [1000.0, 1000.0, 1000.0, 9500.0, 1000.0, 15000.0, 1000.0]
    table, series = one_workload(
        [{"req_memory_mib": 10000, "req_cpu": 2.0}],
        [[(300 * (i + 1), 0.1, m) for i, m in enumerate(mem)]],
    )
    runs = runs_of(table)
    harness = HarnessSettings(checkpoint_s=1800)
    samples = run_samples(series, 0, harness)
    policy = brain().policy(runs[0], [], samples, series)
    assert policy.start() == Allocation(10000.0, 8.0)
    outcome = simulate(samples, policy, harness)
    assert (outcome.migrations, outcome.ooms, outcome.restarts) == (1, 1, 2)
    assert outcome.memory_peak_alloc_mib == 28920.0
    # Lost: 1200 s at the migration (no checkpoint yet), 600 s after it at the kill.
    assert outcome.lost_h == pytest.approx(1800 / 3600)
    allocated_mib_h = (4 * 10000 + 2 * 14460 + 28920) / 12 + 14460 / 3 + 28920 / 6
    assert outcome.memory_gib_h * 1024 == pytest.approx(allocated_mib_h)


def test_brain_sizes_a_run_with_history_from_the_create_stage():
    # learned_margin at its defaults on three earlier runs: its size is what the create
    # stage proposes, below the request as given.
    days = [{"mem_max": 200, "req_memory_mib": 4000}] * 3 + [{"req_memory_mib": 4000}]
    table, series = one_workload(days, [[(300, 0.1, 150.0)]] * 4)
    runs = runs_of(table)
    samples = run_samples(series, 3, HarnessSettings())
    start = brain().policy(runs[3], runs[:3], samples, series).start()
    assert 200.0 < start.memory_mib < 4000.0


@settings(max_examples=60, deadline=None)
# A flat window (0, 698, 0) once had a rounding slope that oom_risk took for a rise.
@example(mem=[0.0, 698.0, 0.0], allocation=200.0, margin=1.5, below=0.6)
# A rise of 1e-38 MiB that the screen's sums round away but oom_risk's fit keeps.
@example(mem=[0.0, 600.0, 1.1754943508222875e-38], allocation=200.0, margin=1.5, below=0.6)
# memory_release acting: 100 MiB for 10 minutes, 150 <= 60 % of 1000.
@example(mem=[100.0, 100.0, 100.0], allocation=1000.0, margin=1.5, below=0.6)
@given(
    mem=st.lists(st.floats(0, 2000), min_size=2, max_size=12),
    allocation=st.floats(200, 2000),
    margin=st.floats(1.05, 3.0),
    below=st.floats(0.1, 0.95),
)
def test_the_screen_lets_through_every_sample_the_running_stage_would_act_on(
    mem, allocation, margin, below
):
    table, series = one_workload([{}], [[(300 * (i + 1), 0.1, m) for i, m in enumerate(mem)]])
    run = runs_of(table)[0]
    # memory_release's shortest hold, so that it can act within the short series.
    release = {"hold_s": 600.0, "margin": margin, "below_share": below}
    loop = BrainLoop(load_registry(), Settings(), release=release)
    samples = run_samples(series, 0, HarnessSettings())
    policy = loop.policy(run, [], samples, series)
    current = Allocation(allocation, 1.0)
    ceilings = loop.ceilings(samples)
    let_through = set(
        candidates(loop.levels(samples), samples.decides, allocation, ceilings).tolist()
    )
    for at in range(len(mem)):
        context = policy._context(Stage.running, at, current)
        proposal = run_stage(loop._registry, Stage.running, context, loop._settings).proposal
        if proposal.migrate:
            assert at in let_through


def test_the_window_peak_is_the_largest_sample_of_the_window_and_where_it_starts():
    ts = np.array([0, 300, 600, 900, 1200, 1800])
    mem = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 1.0])
    peaks, since = window_peaks(ts, mem, window_s=600)
    # windows [0], [0,300], [0..600], [300..900], [600..1200], [1200, 1800]
    assert peaks.tolist() == [5.0, 5.0, 5.0, 4.0, 4.0, 3.0]
    assert since.tolist() == [0, 0, 0, 300, 600, 1200]


def test_brain_gives_memory_back_after_a_long_low_stretch_and_not_again_within_the_hold():
    # 300 s samples, memory_release with a 1 h hold: the peak window covers 1 h at
    # sample 12 (3900 s, the first sample at 300 s): 100 MiB x 1.5 = 150 <= 60 % of the
    # 10000 MiB start, but one plan moves a size at most 8x: 1250 MiB from sample 13. The
    # migration restarts the run 3900 s in: 300 s since the checkpoint at 3600 are lost
    # and re-run at 1250 MiB. The next lowering waits for the 1 h hold: decided on
    # sample 24 (3600 s after the restart: nothing lost), 1250 / 8 = 156.25 -> 157 MiB
    # from sample 25.
    mem = [100.0] * 30
    table, series = one_workload(
        [{"req_memory_mib": 10000, "req_cpu": 2.0}],
        [[(300 * (i + 1), 0.1, m) for i, m in enumerate(mem)]],
    )
    runs = runs_of(table)
    harness = HarnessSettings(checkpoint_s=1800)
    samples = run_samples(series, 0, harness)
    release = {"hold_s": 3600.0, "margin": 1.5, "below_share": 0.6}
    loop = BrainLoop(load_registry(), Settings(), release=release)
    policy = loop.policy(runs[0], [], samples, series)
    outcome = simulate(samples, policy, harness)
    assert (outcome.migrations, outcome.ooms) == (2, 0)
    allocated_mib_h = (13 * 10000 + 12 * 1250 + 5 * 157) / 12 + 1250 / 12
    assert outcome.memory_gib_h * 1024 == pytest.approx(allocated_mib_h)
    assert outcome.lost_h == pytest.approx(300 / 3600)


def test_brain_sizes_from_the_related_runs_the_service_hands_over():
    # 12 earlier daily runs: the two oldest peaked at 3000 MiB, the last ten at 200.
    # The service hands the create stage its 10 most recent related jobs, so
    # learned_margin sees only 200s: 200 x (1.3 + 1 / sqrt(10)) + 768 = 1091.2 -> 1092 MiB
    # (with all 12 its floor, 0.6 x 3000, would hold it at 1800 or more).
    peaks = [3000.0, 3000.0] + [200.0] * 10 + [200.0]
    days = [f"2024-01-{d + 1:02d}" for d in range(13)]
    table = trace(
        [
            {"workload": "w", "day": day, "mem_max": peak, "req_memory_mib": 4000}
            for day, peak in zip(days, peaks, strict=True)
        ]
    )
    rows = [
        {"workload": "w", "ts": START + d * DAY + 300, "cpu": 0.1, "mem_mib": 150.0}
        for d in range(13)
    ]
    series = attach(table, pd.DataFrame(rows), period_s=DAY, sample_s=300.0)
    runs = runs_of(table)
    samples = run_samples(series, 12, HarnessSettings())
    assert brain().policy(runs[12], runs[:12], samples, series).start().memory_mib == 1092.0
