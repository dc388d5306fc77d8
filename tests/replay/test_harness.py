"""The loop harness: allocation, OOM kills, restarts and lost progress on series worked
out by hand."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from brain.replay.harness import (
    Allocation,
    Change,
    HarnessSettings,
    RunSamples,
    decision_mask,
    simulate,
)

GIB = 1024.0


def samples(mem_gib, cpu=None, *, sample_s=900.0, cadence_s=900.0) -> RunSamples:
    """Samples every ``sample_s`` seconds, the first ending at ``sample_s`` (clock at 0)."""
    ts = (np.arange(len(mem_gib)) + 1) * int(sample_s)
    cpu = cpu if cpu is not None else [0.0] * len(mem_gib)
    return RunSamples(
        ts=ts.astype(np.int64),
        cpu=np.asarray(cpu, dtype=float),
        mem=np.asarray(mem_gib, dtype=float) * GIB,
        decides=decision_mask(ts, cadence_s),
        sample_s=sample_s,
    )


@dataclass
class Scripted:
    """A fixed start, scripted changes ({sample: (allocation, restarts)}), OOM answer."""

    first: Allocation
    changes: dict
    after_oom: Allocation | None = None
    ooms_seen: list | None = None

    def start(self):
        return self.first

    def next_change(self, low, high, current):
        for at in sorted(self.changes):
            if low <= at < high:
                allocation, restarts = self.changes[at]
                return Change(at, allocation, restarts)
        return None

    def on_oom(self, at, current):
        if self.ooms_seen is not None:
            self.ooms_seen.append(at)
        return self.after_oom or current


def test_a_fixed_size_without_kills_integrates_allocation_use_and_throttling():
    # 4 samples of 15 min = 1 h. Memory 1, 2, 3, 2 GiB under 4 GiB; CPU 1, 3, 1, 1 under 2.
    run = samples([1, 2, 3, 2], cpu=[1, 3, 1, 1])
    outcome = simulate(run, Scripted(Allocation(4 * GIB, 2.0), {}), HarnessSettings())
    assert outcome.hours == pytest.approx(1.0)
    assert outcome.memory_gib_h == pytest.approx(4.0)  # 4 GiB x 1 h
    assert outcome.memory_used_gib_h == pytest.approx(2.0)  # (1+2+3+2) x 0.25
    assert outcome.core_h == pytest.approx(2.0)
    assert outcome.cores_used_h == pytest.approx(1.5)
    assert outcome.throttled_h == pytest.approx(0.25)  # only the 3-core sample
    assert (outcome.ooms, outcome.restarts, outcome.lost_h) == (0, 0, 0.0)


def test_an_oom_kill_restarts_at_the_answer_and_loses_progress_since_the_checkpoint():
    # Samples end at 900, 1800, ... s; the 4th (3600 s) uses 5 GiB > 4 GiB: killed.
    # Checkpoints every 2400 s: the one at 2400 s is the last, so 1200 s are lost.
    seen = []
    policy = Scripted(Allocation(4 * GIB, 1.0), {}, Allocation(8 * GIB, 1.0), seen)
    run = samples([1, 1, 1, 5, 1, 1])
    outcome = simulate(run, policy, HarnessSettings(checkpoint_s=2400))
    assert seen == [3]
    assert outcome.ooms == 1 and outcome.restarts == 1
    assert outcome.lost_h == pytest.approx(1200 / 3600)
    # 4 samples at 4 GiB, 2 at 8 GiB (0.25 h each), and the lost 1/3 h re-run at 8 GiB.
    assert outcome.memory_gib_h == pytest.approx(4 * 4 * 0.25 + 8 * 2 * 0.25 + 8 / 3)
    assert outcome.core_h == pytest.approx(1.5 + 1 / 3)
    assert outcome.memory_peak_alloc_mib == 8 * GIB


def test_a_kill_that_is_not_answered_repeats_on_every_sample_above_the_allocation():
    # After each kill the clock restarts: kills at 2700 s (2700 - 0 lost, checkpoint
    # 3600) and at 3600 s (900 s since the restart).
    run = samples([1, 1, 5, 5, 1])
    outcome = simulate(
        run, Scripted(Allocation(4 * GIB, 1.0), {}), HarnessSettings(checkpoint_s=3600)
    )
    assert outcome.ooms == 2
    assert outcome.lost_h == pytest.approx((2700 + 900) / 3600)


def test_a_migration_applies_from_the_next_sample_and_costs_a_restart_unless_in_place():
    # Decided on sample 1 (1800 s): samples 0-1 at 4 GiB, 2-3 at 2 GiB.
    changes = {1: (Allocation(2 * GIB, 1.0), True)}
    run = samples([1, 1, 1, 1])
    moved = simulate(
        run, Scripted(Allocation(4 * GIB, 1.0), changes), HarnessSettings(checkpoint_s=1000)
    )
    assert (moved.migrations, moved.resizes, moved.restarts) == (1, 1, 1)
    # 1800 s since the start, checkpoints every 1000 s: 800 s lost, re-run at 2 GiB.
    assert moved.lost_h == pytest.approx(800 / 3600)
    assert moved.memory_gib_h == pytest.approx(4 * 2 * 0.25 + 2 * 2 * 0.25 + 2 * 800 / 3600)
    in_place = simulate(
        run,
        Scripted(Allocation(4 * GIB, 1.0), changes),
        HarnessSettings(checkpoint_s=1000, migration_restarts=False),
    )
    assert (in_place.migrations, in_place.resizes, in_place.lost_h) == (0, 1, 0.0)
    assert in_place.memory_gib_h == pytest.approx(3.0)


def test_no_decision_is_taken_on_the_sample_a_run_is_killed_at():
    # A change scripted on the kill sample (2) is never applied: the kill comes first
    # and the next search starts after it.
    changes = {2: (Allocation(1 * GIB, 1.0), True)}
    run = samples([1, 1, 9, 1])
    outcome = simulate(run, Scripted(Allocation(4 * GIB, 1.0), changes), HarnessSettings())
    assert (outcome.ooms, outcome.migrations, outcome.resizes) == (1, 0, 0)


def test_decisions_fall_on_the_first_sample_of_every_cadence_tick():
    ts = np.array([300, 600, 900, 1200, 1500])
    assert decision_mask(ts, 600).tolist() == [True, False, True, False, True]
    assert decision_mask(ts, 300).all()
