"""Brain's loop (``brain.replay.brain_policy``) replayed on series worked out by hand:
the default pipeline's create, running and OOM stages, the screen of the samples its
running stage can act on, and the series attached to the run table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from brain.config import Settings
from brain.domain import Stage
from brain.optimizing import load_registry
from brain.optimizing.pipeline import run_stage
from brain.replay.brain_policy import BrainLoop
from brain.replay.harness import Allocation, HarnessSettings, run_samples, simulate
from brain.replay.runs import runs_of
from brain.replay.screen import candidates, window_peaks
from brain.replay.series import attach
from tests.builders.traces import DAY, START, one_workload, trace


def test_the_series_attaches_to_the_run_of_its_day_and_nothing_else():
    table, series = one_workload(
        [{}, {}], [[(300, 1.0, 10.0), (600, 1.0, 20.0)], [(300, 1.0, 30.0)]]
    )
    assert series.bounds(0) == (0, 2) and series.bounds(1) == (2, 3)
    assert series.mem.tolist() == [10.0, 20.0, 30.0]


def brain() -> BrainLoop:
    return BrainLoop(load_registry(), Settings())


def test_brain_migrates_before_an_oom_then_answers_a_kill_with_oom_recovery():
    # A first run (no history): the create stage's startup keeps the job's own ask,
    # 10000 MiB and 2 cores.
    # Sample 3 (1200 s) uses 9500 >= 90 % of 10000, and the trend of samples 0-3 (1000,
    # 1000, 1000, 9500 at -900..0 s: slope 8.5 MiB/s, 6950 at 0) reaches 12050 in 600 s:
    # oom_risk migrates to 12050 x 1.2 = 14460 MiB from sample 4. Sample 5 uses
    # 15000 > 14460: killed; the samples rose and fell (no steady growth to project), so
    # oom_recovery doubles it to 28920 MiB.
    mem = [1000.0, 1000.0, 1000.0, 9500.0, 1000.0, 15000.0, 1000.0]
    table, series = one_workload(
        [{"req_memory_mib": 10000, "req_cpu": 2.0}],
        [[(300 * (i + 1), 0.1, m) for i, m in enumerate(mem)]],
    )
    runs = runs_of(table)
    harness = HarnessSettings(checkpoint_s=1800)
    samples = run_samples(series, 0, harness)
    policy = brain().policy(runs[0], [], samples, series)
    assert policy.start() == Allocation(10000.0, 2.0)
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
