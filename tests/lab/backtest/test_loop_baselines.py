"""The baseline loops of ``brain backtest --replay`` replayed on series worked out by hand:
VPA, a one-shot rule with its OOM fallback, and the moving window (Autopilot)."""

from __future__ import annotations

import numpy as np
import pytest

from brain.lab.backtest.baselines import LastRunsRule
from brain.lab.backtest.loop.baselines import (
    AutopilotLoop,
    OneShotLoop,
    VpaLoop,
    VpaPolicy,
    oom_bump,
    running_quantiles,
)
from brain.replay.harness import Allocation, HarnessSettings, run_samples, simulate
from brain.replay.runs import runs_of
from tests.builders.traces import one_workload


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
