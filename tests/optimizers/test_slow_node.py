"""slow_node: hand-worked medians, MADs and windows.

Defaults: threshold 1.5x, mad_k 3, three 120 s windows, 2 samples and 4 workers per
window, 300 s warmup, 1800 s cooldown, one replacement per plan. Samples are 30 s apart
over the last 360 s (NOW-330 .. NOW), so each window (NOW-360, NOW-240], (NOW-240,
NOW-120], (NOW-120, NOW] holds 4 samples of each worker.
"""

from __future__ import annotations

from datetime import timedelta

from brain.domain import PlanStatus, RoleSpec, Stage
from brain.optimizing import EventView, NodeChange, NodeSample, PlanView
from optimizers.slow_node import SlowNodeOptimizer, SlowNodeSettings
from tests.builders.views import NOW, context, node

SETTINGS = SlowNodeSettings()


def worker(i: int):
    return node(f"worker-{i}", "worker", cpu=4, memory_mib=8192)


def step_times(name: str, values: list[float]) -> list[NodeSample]:
    """One value per window (oldest first), 4 samples 30 s apart in each."""
    samples = []
    for w, value in enumerate(values):
        for j in range(4):
            seconds_before_now = 330 - 30 * (4 * w + j)
            ts = NOW - timedelta(seconds=seconds_before_now)
            samples.append(NodeSample(node=name, ts=ts, cpu=3, memory_mib=4000, step_time_s=value))
    return samples


def propose(per_worker: dict[int, list[float]], settings=SETTINGS, **kwargs):
    nodes = [worker(i) for i in per_worker]
    samples = [s for i, v in per_worker.items() for s in step_times(f"worker-{i}", v)]
    ctx = context(Stage.running, nodes=nodes, samples=samples, **kwargs)
    return SlowNodeOptimizer().propose(ctx, settings)


# worker-4 at 1.8 s: median of (0.9, 1.0, 1.0, 1.1, 1.8) = 1.0, MAD of (0.1, 0, 0, 0.1, 0.8)
# = 0.1, so 3 robust sigmas = 3 x 1.4826 x 0.1 = 0.445; 1.8 > 1.5 x 1.0 and 0.8 > 0.445.
STEADY = {0: [0.9] * 3, 1: [1.0] * 3, 2: [1.0] * 3, 3: [1.1] * 3}


def test_a_worker_slow_in_three_windows_is_replaced_at_its_size():
    proposal = propose({**STEADY, 4: [1.8, 1.8, 1.8]})
    assert proposal.migrate == [
        NodeChange(role="worker", name="worker-4", cpu=4, memory_mib=8192, gpu=None)
    ]
    evidence = proposal.reasons[0].evidence
    assert evidence["step_time_s"] == [1.8, 1.8, 1.8]
    assert evidence["median_step_time_s"] == [1.0, 1.0, 1.0]
    assert evidence["mad_s"] == [0.1, 0.1, 0.1]
    assert "1.80x" in proposal.reasons[0].message
    assert proposal.reasons[0].threshold["threshold"] == 1.5


def test_slow_in_two_of_three_windows_is_not_enough():
    assert propose({**STEADY, 4: [1.0, 1.8, 1.8]}).is_empty
    # ...but with two windows required it is
    assert not propose({**STEADY, 4: [1.0, 1.8, 1.8]}, SlowNodeSettings(windows=2)).is_empty


def test_below_the_threshold_is_not_slow():
    # 1.45 / 1.0 = 1.45x < 1.5x, although 0.45 > 0.445 robust sigmas
    assert propose({**STEADY, 4: [1.45] * 3}).is_empty


def test_ordinary_spread_among_workers_is_not_a_straggler():
    # (0.5, 1.0, 1.0, 1.6, 1.6): median 1.0, MAD of (0.5, 0, 0, 0.6, 0.6) = 0.5, 3 robust
    # sigmas = 2.22: 1.6 is 1.6x the median but only 0.6 above it
    spread = {0: [0.5] * 3, 1: [1.0] * 3, 2: [1.0] * 3, 3: [1.6] * 3, 4: [1.6] * 3}
    assert propose(spread).is_empty


def test_too_few_workers_or_samples_are_not_judged():
    # 3 workers: below min_nodes 4
    assert propose({0: [1.0] * 3, 1: [1.0] * 3, 2: [3.0] * 3}).is_empty
    # 4 samples a window, 5 required
    assert propose({**STEADY, 4: [1.8] * 3}, SlowNodeSettings(min_samples=5)).is_empty


def test_the_first_minutes_after_a_restart_are_ignored():
    # relaunched at NOW-200: its samples before NOW+100 are ignored, so it has none
    relaunch = EventView(id=1, ts=NOW - timedelta(seconds=200), kind="relaunched", node="worker-4")
    assert propose({**STEADY, 4: [1.8] * 3}, events=[relaunch]).is_empty
    # relaunched at NOW-700: judged again from NOW-400 on, every window has its samples
    earlier = EventView(id=1, ts=NOW - timedelta(seconds=700), kind="relaunched", node="worker-4")
    assert not propose({**STEADY, 4: [1.8] * 3}, events=[earlier]).is_empty


def replaced(status: PlanStatus, seconds_ago: float) -> PlanView:
    change = NodeChange(role="worker", name="worker-4", cpu=4, memory_mib=8192)
    at = NOW - timedelta(seconds=seconds_ago)
    return PlanView(
        id=1,
        stage=Stage.running,
        status=status,
        created_at=at,
        roles={"worker": RoleSpec(count=5)},
        migrate=(change,),
        optimizers=("slow_node",),
        applied_at=at if status == PlanStatus.applied else None,
    )


def test_a_node_replaced_within_the_cooldown_is_left_alone():
    slow = {**STEADY, 4: [1.8] * 3}
    # applied 1000 s ago (< 1800 s): cooling down; warmup ended at NOW-700
    proposal = propose(slow, plans=[replaced(PlanStatus.applied, 1000)])
    assert proposal.is_empty and "cooling down" in proposal.reasons[0].message
    # a rejected replacement cools down as well; after 2000 s it is proposed again
    assert propose(slow, plans=[replaced(PlanStatus.rejected, 1000)]).is_empty
    assert not propose(slow, plans=[replaced(PlanStatus.applied, 2000)]).is_empty
    # a replacement still pending (or superseded) does not hold the next one back
    assert not propose(slow, plans=[replaced(PlanStatus.superseded, 1000)]).is_empty


def test_one_replacement_per_plan_slowest_first():
    # (0.9, 1.0, 1.0, 1.1, 1.8, 2.0): median 1.05, MAD 0.1 -> 0.445; both are slow
    proposal = propose({**STEADY, 4: [1.8] * 3, 5: [2.0] * 3})
    assert [c.name for c in proposal.migrate] == ["worker-5"]
    assert "at most 1 replacement" in proposal.reasons[1].message


def test_only_workers_are_judged():
    ps = node("ps-0", "ps", cpu=4, memory_mib=8192)
    samples = step_times("ps-0", [9.0] * 3)
    ctx = context(Stage.running, nodes=[ps], samples=samples)
    assert SlowNodeOptimizer().propose(ctx, SETTINGS).is_empty
