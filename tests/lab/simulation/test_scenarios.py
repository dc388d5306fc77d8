"""Scenarios run end to end: the simulated master drives the real app through the client."""

from __future__ import annotations

import pytest

from brain.client import BrainClient
from brain.lab.simulation.run import run_scenario
from brain.lab.simulation.scenarios import SCENARIOS


def test_same_seed_same_figures(client):
    brain = BrainClient(http=client)
    first = run_scenario(brain, SCENARIOS["hot-ps"], seed=3, horizon_s=900)[1]
    second = run_scenario(brain, SCENARIOS["hot-ps"], seed=3, horizon_s=900)[1]
    assert first == second
    assert (first.scenario, first.seed, first.horizon_s) == ("hot-ps", 3, 900)
    assert first.best_steps_per_sec > first.reached_steps_per_sec > 0


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_scenario_keeps_the_invariants(client, name):
    """20 simulated minutes per scenario through the real app: no plan breaks a limit, no OOM
    fix is lost, no worker count is reversed within the cooldown, no foreign role."""
    result = run_scenario(BrainClient(http=client), SCENARIOS[name], seed=1, horizon_s=1200)[1]
    assert result.over_limit_seconds == 0
    assert result.oom_fixes_lost == 0
    assert result.oscillations == 0
    assert result.plans_with_foreign_roles == 0


def test_the_design_example_grows_from_one_worker(client):
    # ps-steady starts at ~30 steps/s (1 worker); the estimate plan adds workers and PS.
    result = run_scenario(BrainClient(http=client), SCENARIOS["ps-steady"], 2, 1200)[1]
    assert result.plans_applied >= 2  # create, estimate
    assert result.reached_steps_per_sec > 2 * 30


def test_an_injected_2x_slow_worker_is_replaced_and_no_other(client):
    """Worker 0 turns 2x slower 30-35 minutes in. slow_node needs its step time slow in
    three 120 s windows, the oldest more than half after the slowdown (360 - 60 s, less a
    15 s tick), and the running stage asks every 300 s: the replacement comes 285 to
    360 + 300 + 15 s later."""
    run, result = run_scenario(
        BrainClient(http=client), SCENARIOS["slow-worker-2x"], seed=1, horizon_s=2700
    )
    assert 1800 <= run.slowed_at <= 2100
    assert 285 <= result.slow_node_delay_s <= 675
    assert result.slow_node_false_replacements == 0


def test_a_1_5x_slow_worker_is_not_mistaken_for_another(client):
    # At exactly slow_node's 1.5x threshold it is flagged only when the noise lifts it
    # above (README: 10 of 20 one-hour runs); no other worker is ever replaced.
    run, result = run_scenario(
        BrainClient(http=client), SCENARIOS["slow-worker-1.5x"], seed=1, horizon_s=2700
    )
    assert run.slowed_at is not None
    assert result.slow_node_false_replacements == 0


def test_an_oom_storm_is_fixed_once_per_kill(client):
    result = run_scenario(BrainClient(http=client), SCENARIOS["oom-storm"], 2, 1200)[1]
    # 4 workers, each killed at the 4 GiB they ask (10 GiB used); none of them held a
    # sample to size from, so one fix of x 3 (12 GiB) holds for all of them.
    assert result.oom_kills == 4
    assert result.oom_kills_after_brain_size == 0
    assert result.oom_fixes_lost == 0


def test_a_saturated_ps_tier_gets_more_ps_once_it_binds(client):
    """ps-growing-load: the estimate (4 min) sets the PS; as the PS cost per step grows the
    PS saturate; ps_scaling adds PS then, not within the PS tier's cooldown (300 s) of the
    estimate's PS change, and not an hour later. The create plan is the job's own request
    (workers of 4 cores, all a worker needs): the chief is CPU-bound in the estimate's
    minutes, which sizes workers at 1.2 x its use and leaves the PS less of the limit, so
    the first PS come while a busy tier holds back more workers (the workers they make
    room for follow), and more PS once the workers wait on it."""
    run, result = run_scenario(BrainClient(http=client), SCENARIOS["ps-growing-load"], 1, 4800)
    scaled = [a for a in run.applied if a.plan.roles.get("ps") and a.plan.stage == "running"]
    added = scaled[0]
    assert any(r.optimizer == "ps_scaling" for r in added.plan.reasons)
    estimate = next(a for a in run.applied if a.plan.stage == "estimate")
    assert 300 <= added.t - estimate.t < 3600
    before, after = added.counts["ps"]
    assert after > before
    assert len(added.plan.ps_hosts) == after
    assert added.plan.ps_hosts[0].endswith("-edljob-ps-0:2222")
    # Once the workers wait on the saturated tier under the limit, the PS come with the
    # workers traded for them (more PS of today's size do not fit beside the workers).
    waiting = [
        a
        for a in scaled
        if any(
            r.optimizer == "ps_scaling"
            and ("speed stalled" in r.message or "cannot grow" in r.message)
            for r in a.plan.reasons
        )
    ]
    assert waiting and all(a.counts["ps"][1] > a.counts["ps"][0] for a in waiting)

    def mean_speed(start: float, end: float) -> float:
        speeds = [x.steps_per_sec for x in run.timeline if start <= x.t < end]
        return sum(speeds) / len(speeds)

    # the 5 minutes before the first PS against 5 minutes after the worker step they made
    # room for: well above the speed's 3 % noise
    grown = next(a for a in run.applied if a.t > added.t and "worker" in a.counts)
    assert mean_speed(grown.t + 120, grown.t + 420) > 1.05 * mean_speed(added.t - 300, added.t)
    assert result.over_limit_seconds == 0
    assert result.oom_fixes_lost == 0
    assert result.oscillations == 0


def test_a_short_cluster_gets_elastic_workers_back_and_stops_growth(client):
    """cluster-short, seed 1: the estimate (4 min) sizes 8 workers of 4.2 cores
    (max_count 8). From 1200 s pending pods ask 12 cores and nothing is free: the first
    running call in the window (1380 s) gives back ceil(12 / 4.2) = 3 capped at max_return
    2 (8 -> 6); cluster_shortage's 600 s cooldown then holds until 1980 s, when
    12 - 2 x 4.2 = 3.6 cores are still short: one more (6 -> 5), never below min_count 2,
    nothing added while short. Idle again from 2700 s, worker_tuning grows the job at its
    next call (2880 s)."""
    run, result = run_scenario(
        BrainClient(http=client), SCENARIOS["cluster-short"], seed=1, horizon_s=3000
    )
    given = [
        a
        for a in run.applied
        if any(
            r.optimizer == "cluster_shortage" and "returned" in r.evidence for r in a.plan.reasons
        )
    ]
    assert [(a.t, a.counts["worker"]) for a in given] == [(1380, (8, 6)), (1980, (6, 5))]
    assert result.workers_given_back == 3
    assert result.workers_added_while_short == 0
    assert result.min_workers == 5 >= SCENARIOS["cluster-short"].roles["worker"].min_count
    regrown = [a for a in run.applied if a.t >= 2700 and "worker" in a.counts]
    assert regrown[0].t == 2880
    assert regrown[0].counts["worker"][1] > 5
    assert result.over_limit_seconds == 0
    assert result.oom_fixes_lost == 0
    assert result.oscillations == 0
