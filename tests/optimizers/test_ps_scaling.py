"""ps_scaling: more PS while training runs when the PS tier as a whole is saturated."""

import math
from dataclasses import replace
from datetime import timedelta

from brain.domain import Limits, PlanStatus, RoleBounds, RoleSpec, Stage
from brain.optimizing import NodeChange, Reason
from brain.optimizing.context import NodeSample
from optimizers.ps_scaling import PsScalingOptimizer, PsScalingSettings
from tests.builders.views import NOW, context, job, node, plan, series, speeds

# tier >= 80 %, trainers <= 70 %, 8 samples, 6 speed samples stalled below +5 %, 60 % target
SETTINGS = PsScalingSettings()
ROLES = {
    "ps": RoleSpec(count=2, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=4, cpu=4, memory_mib=8192),
}
PS = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(2)]
WORKERS = [
    node(f"j-edljob-worker-{i}", "worker", cpu=4, memory_mib=8192, index=i) for i in range(4)
]
# The job as created an hour ago: 2 PS and 4 workers of 4 cores each.
CREATED = plan(
    stage=Stage.create,
    seconds_ago=3600,
    roles={"ps": RoleSpec(count=2, cpu=4), "worker": RoleSpec(count=4, cpu=4)},
)
STALLED = speeds([(4, v) for v in (20.0, 20.2, 19.8, 20.0, 20.1, 19.9)])


def samples(ps=(3.6, 3.4), worker=2.0):
    points = [s for n, cpu in zip(PS, ps, strict=True) for s in series(n.name, cpu=[cpu] * 8)]
    return points + [s for n in WORKERS for s in series(n.name, cpu=[worker] * 8)]


def moved_ps(cpu, ps_used, worker_used):
    """ps-0 moved to ``cpu`` cores (the role's 4) beside ps-1 at 4, and the workers: the
    nodes, and 8 samples of each at ``ps_used`` (ps-0, ps-1) and ``worker_used``."""
    moved = [
        node("j-edljob-ps-0", "ps", cpu=cpu, memory_mib=8192, index=0),
        node("j-edljob-ps-1", "ps", cpu=4, memory_mib=8192, index=1),
    ]
    points = [
        s for n, used in zip(moved, ps_used, strict=True) for s in series(n.name, cpu=[used] * 8)
    ]
    points += [s for n in WORKERS for s in series(n.name, cpu=[worker_used] * 8)]
    return moved + WORKERS, points


def propose(
    points=None,
    speed=STALLED,
    plans=(),
    namespace="ml",
    nodes=None,
    settings=SETTINGS,
    limits=None,
):
    ctx = context(
        Stage.running,
        job(roles=ROLES, namespace=namespace, limits=limits),
        nodes=nodes or PS + WORKERS,
        samples=points if points is not None else samples(),
        speed=speed,
        plans=plans,
    )
    return PsScalingOptimizer().propose(ctx, settings)


def test_a_saturated_tier_with_waiting_workers_gets_more_ps():
    proposal = propose()
    # PS at 3.6 and 3.4 of 4 cores: tier 87.5 %; workers at 2 of 4: 50 %; speed 20.0 -> 20.0.
    # Demand at full pace 7.0 / 0.5 = 14 cores; at 60 % of 4 cores: ceil(5.83) = 6 PS,
    # at most 2 + 2 = 4. Those 4 get the demand's share each: 14 / 4 / 0.6 = 5.83 -> 5.9
    # cores (the job has no limit)
    assert proposal.roles == {"ps": RoleSpec(count=4, cpu=5.9)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}.ml.svc:2222" for i in range(4)]
    evidence = proposal.reasons[0].evidence
    assert evidence["ps_tier_utilization"] == 0.875
    assert evidence["trainer_utilization"] == 0.5
    assert evidence["ps_cpu_demand"] == 14.0
    assert evidence["speed_change"] == 0.0
    assert evidence["ps_cpu"] == 5.9
    assert "7.00 / 0.50 = 14.00 cores" in proposal.reasons[0].message
    assert "each of the 4 gets its share, 14.00 / 4 / 0.6 -> 5.9 cores" in (
        proposal.reasons[0].message
    )
    # Under 32 cores (16 for the workers) 4 PS of 5.9 do not fit; 4 x 4 do: the 4 PS at
    # the request as before (no size between 4 and 5.9 fits: 95 % steps down from 5.9)
    capped = propose(limits=Limits(cpu=32))
    assert capped.roles == {"ps": RoleSpec(count=4)}
    # Under 38 cores: 5.9 -> 5.6 (over) -> 5.3 (4 x 5.3 + 16 = 37.2 fits)
    assert propose(limits=Limits(cpu=38)).roles == {"ps": RoleSpec(count=4, cpu=5.3)}
    # Under 35 cores: ... 5.0 (36, over) -> 4.7 fits (34.8), but 4.7 < 1.25 x 4 = 5: not
    # worth relaunching every PS, the 4 PS at the request
    assert propose(limits=Limits(cpu=35)).roles == {"ps": RoleSpec(count=4)}


def test_one_ps_at_a_time_and_hosts_without_a_namespace():
    proposal = propose(namespace=None, settings=PsScalingSettings(step=1))
    # 3 PS of 14 / 3 / 0.6 = 7.78 -> 7.8 cores
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=7.8)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}:2222" for i in range(3)]


def test_a_tier_below_saturation_is_left_alone():
    # workers at 3.6 of 4 cores (90 % > 70 %): their unused 10 % over 3 PS instead of 2
    # gains 1 / (0.9 + 0.1 x 2/3) = +3.4 % < 5 %: not waiting on anything
    proposal = propose(samples(ps=(2.0, 2.0), worker=3.6))
    assert proposal.is_empty
    assert "PS tier at 50% CPU, below 80%" in proposal.reasons[0].message


def test_one_more_ps_tells_whether_busy_looking_trainers_wait_on_the_exchange():
    # Workers at 3.2 of 4 (80 %): their unused 20 % over 3 PS gains 1 / (0.8 + 0.2 x 2/3)
    # = +7.1 % >= 5 %. The job ran one configuration: a curve of the PS count alone goes
    # through it as well as a constant, so one more PS gains between 0 and +50 %, and
    # only running another count tells. A fourth would add 1.111 / 1.071 = +3.7 %: 3 PS.
    # Trainers that keep their pace give up no cores: today's 8 PS cores over 3, 2.67 ->
    # 2.6 each, the busiest carrying 4.0 x 1.071 / 3 = 1.43 (55 %)
    proposal = propose(samples(ps=(2.0, 2.0), worker=3.2))
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=2.6)}
    why = proposal.reasons[0]
    assert "the job never ran another PS count beside the same trainers" in why.message
    assert "PS 2 -> 3, 4 -> 2.6 cores each" in why.message
    # judged like any addition: the count and size before it
    assert (why.evidence["ps_count"], why.evidence["ps_cpu_before"]) == (2, 4)
    # once the job ran 2 and 4 PS beside the same trainers at the same speed, the curves
    # agree a fifth gains nothing: no PS (the tier, at 25 % 600 s after its count changed,
    # gets fewer cores for each PS instead: 1.0 / 0.6 = 1.67 -> 1.7)
    plans, speed = _ps_count_changed(2, 4, 20.0, 20.0)
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[1.0] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    fewer_cores = propose(points, speed=speed, plans=plans, nodes=four + WORKERS)
    assert fewer_cores.roles == {"ps": RoleSpec(cpu=1.7)}
    # with shrinking off, nothing
    off = PsScalingSettings(shrink_below=0)
    assert propose(points, speed=speed, plans=plans, nodes=four + WORKERS, settings=off).is_empty


def test_busy_looking_trainers_beside_many_ps_step_to_the_fewest_more_that_pay():
    # 4 PS at 2.0 of 4 cores (50 %), workers at 3.2 of 4 (80 %): a fifth PS gains only
    # 1 / (0.8 + 0.2 x 4/5) = +4.2 %, below 5 %, but 6 PS (1.5 x 4) gain 1 / (0.8 + 0.2 x
    # 4/6) = +7.1 %. The job ran one configuration, so the most hopeful curve has more PS
    # pay and none can tell the PS's links from the rest of the wait: the tier steps to 6
    # PS (a seventh adds 1.094 / 1.071 = +2.1 %, below 5 %). Trainers that keep their pace
    # give up no cores: today's 16 PS cores over 6, 2.67 -> 2.6 each, the busiest carrying
    # 8.0 x 1.071 / 6 = 1.43 (55 %)
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[2.0] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    proposal = propose(points, nodes=four + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=6, cpu=2.6)}
    assert "the job never ran another PS count beside the same trainers" in (
        proposal.reasons[0].message
    )
    assert "PS 4 -> 6, 4 -> 2.6 cores each" in proposal.reasons[0].message
    # at most 1.25 x today's when exploring (5 PS, +4.2 %): not waiting on the PS
    near = PsScalingSettings(network_explore_factor=1.25)
    held = propose(points, nodes=four + WORKERS, settings=near)
    assert held.is_empty
    assert "PS tier at 50% CPU, below 80%: not saturated" in held.reasons[0].message


def test_one_hot_ps_is_hot_ps_business():
    # ps-0 at 100 %, ps-1 at 65 %: tier 82.5 %, but 1.0 >= 1.5 x 0.65
    proposal = propose(samples(ps=(4.0, 2.6)))
    assert proposal.is_empty
    assert "j-edljob-ps-0 is hot relative to the other PS" in proposal.reasons[0].message


def test_a_busy_tier_makes_room_for_more_workers_while_the_limit_allows():
    # Workers at 3.2 of 4 cores (80 % > 70 %): not waiting on the PS, but the tier at
    # 87.5 % stops worker_tuning. Today's 7.0 PS cores at 60 % of 4: ceil(2.92) = 3 PS.
    # 2 PS x 4 + 4 workers x 4 = 24 cores; a third PS needs 28.
    proposal = propose(samples(worker=3.2), limits=Limits(cpu=28))
    assert proposal.roles == {"ps": RoleSpec(count=3)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}.ml.svc:2222" for i in range(3)]
    assert "not waiting on the PS" in proposal.reasons[0].message
    assert "PS 2 -> 3" in proposal.reasons[0].message
    assert proposal.reasons[0].evidence["ps_cpu_used"] == 7.0


def test_a_busy_ps_that_is_not_hot_alone_makes_the_tier_busy():
    # ps-0 at 3.4 of 4 (85 %), ps-1 at 2.6 (65 %): tier 75 %, below 80 %, but ps-0 holds
    # the speed and hot_ps leaves it (0.85 < 1.5 x 0.65: more PS would help, not a larger
    # one). Workers at 3.2 of 4 (80 %) keep their pace: room for more workers, as for a
    # busy tier. Today's 6.0 PS cores at 60 % of 4: ceil(2.5) = 3 PS, within 28 cores.
    proposal = propose(samples(ps=(3.4, 2.6), worker=3.2), limits=Limits(cpu=28))
    assert proposal.roles == {"ps": RoleSpec(count=3)}
    assert "PS tier at 75% CPU (its busiest PS at 85%)" in proposal.reasons[0].message
    assert proposal.reasons[0].evidence["ps_cpu_used"] == 6.0
    # ps-1 at 2.0 (50 %): 0.85 >= 1.5 x 0.5, ps-0 is hot on its own: hot_ps moves it
    alone = propose(samples(ps=(3.4, 2.0), worker=3.2), limits=Limits(cpu=28))
    assert alone.is_empty
    # both at 3.0 (75 %), the workers at 3.6 of 4 (90 %): nothing holds the speed
    calm = propose(samples(ps=(3.0, 3.0), worker=3.6), limits=Limits(cpu=28))
    assert calm.is_empty
    assert "PS tier at 75% CPU, below 80%: not saturated" in calm.reasons[0].message


def test_a_busy_tier_under_a_full_limit_trades_for_more_smaller_ps():
    # A third PS of 4 cores needs 28 > 27.9 cores. The trade: PS core-s per step, the
    # median of the four lowest 7.0 / speed, (7 / 20.1 + 7 / 20.0) / 2 = 0.34915; the 4
    # trainers at full pace 20 / 0.8 = 25 steps/s; ps-0 holds (3.6 - 3.4) / 7 = 2.86 % of
    # the traffic beyond an even share, so of 3 PS the busiest serves 0.0286 + 0.9714 / 3
    # = 35.24 %: ceil(0.34915 x 25 x 0.3524 / 0.85) = 3.7 cores each, 3 x 3.7 + 4 x 4 =
    # 27.1 cores, no worker given up: 25 steps/s, +25 % >= paced_trade_min_gain 20 %.
    # (4 PS of 2.8 predict no more.)
    proposal = propose(samples(worker=3.2), limits=Limits(cpu=27.9))
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=3.7)}
    assert "predicted 25.00 steps/s (+25%). PS 2 -> 3, 4 -> 3.7 cores each" in (
        proposal.reasons[0].message
    )
    assert proposal.reasons[0].threshold["paced_trade_min_gain"] == 0.2
    # Trainers that keep their pace may only be sized above their use: a trade for less
    # than paced_trade_min_gain is not made (trade_min_gain, 10 %, is for waiting ones)
    proposal = propose(
        samples(worker=3.2),
        limits=Limits(cpu=27.9),
        settings=PsScalingSettings(paced_trade_min_gain=0.3),
    )
    assert proposal.is_empty
    assert (
        "one more PS would exceed the job's limits, and no trade of workers for more, "
        "smaller PS is predicted to gain 30%" in proposal.reasons[0].message
    )


def test_beside_a_pinned_ps_a_trade_that_keeps_every_worker_takes_the_room_for_less():
    # Both PS at 3.9 of 4 cores (97.5 %, pinned), the 4 workers at 3.6 of 4 (90 %): they
    # keep their pace, and a third PS of 4 cores needs 28 > 27.9. PS core-s per step, the
    # median of the four lowest 7.8 / speed: (7.8 / 20.1 + 7.8 / 20.0) / 2 = 0.389030; the
    # trainers at full pace 20 / 0.9 = 22.22 steps/s. 3 PS: ceil(0.38903 x 22.22 / 3 /
    # 0.85) = 3.4 cores each, 3 x 3.4 + 4 x 4 = 26.2 cores, every worker kept: predicted
    # min(22.22, 3.4 x 0.85 / (0.38903 / 3) = 22.29) = 22.22 steps/s, +11 %: over
    # pinned_trade_min_gain (5 %), under paced_trade_min_gain (20 %). (4 PS of 2.6
    # predict no more.)
    pinned = samples(ps=(3.9, 3.9), worker=3.6)
    proposal = propose(pinned, limits=Limits(cpu=27.9))
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=3.4)}
    assert "predicted 22.22 steps/s (+11%). PS 2 -> 3, 4 -> 3.4 cores each" in (
        proposal.reasons[0].message
    )
    assert proposal.reasons[0].threshold["pinned_trade_min_gain"] == 0.05
    # Asked for 12 % instead, the trade is not made, nor the paced one (20 %)
    high = PsScalingSettings(pinned_trade_min_gain=0.12)
    assert propose(pinned, limits=Limits(cpu=27.9), settings=high).is_empty
    # PS at 3.7 of 4 (92.5 %) are not pinned: the workers' unused CPU may be a size above
    # their use, and the same trade (+11 %) is held to paced_trade_min_gain
    busy = propose(samples(ps=(3.7, 3.7), worker=3.6), limits=Limits(cpu=27.9))
    assert busy.is_empty
    assert "no trade of workers for more, smaller PS is predicted to gain 20%" in (
        busy.reasons[0].message
    )
    # Under 26 cores 3 PS of 3.4 do not fit beside every worker: no trade gives one up
    # for 5 %
    assert propose(pinned, limits=Limits(cpu=26)).is_empty
    # A cost per step that rose at one configuration (the speed 20.0 -> 15.0 at the same
    # PS use) is a load that grows: the trade's prediction at today's cost would not hold
    growing = speeds([(4, 20.0)] * 4 + [(4, 15.0)] * 4)
    assert propose(pinned, limits=Limits(cpu=27.9), speed=growing).is_empty


def test_no_pinned_trade_where_the_busiest_ps_keeps_a_size_of_its_own():
    # ps-0, moved to 5 cores, pinned at 4.9 (98 %), ps-1 at 3.0 of 4 (75 %): the tier at
    # 86.5 %, ps-0 not hot alone (0.98 < 1.5 x 0.75), the workers at 3.6 of 4 (90 %); a
    # third PS of 4 needs 29 > 27.9 cores. PS core-s per step (7.9 / 20.1 + 7.9 / 20.0) /
    # 2 = 0.394017; ps-0's part beyond an even share min((4.9 - 3.0) / 7.9, 1 - 2 x 3.0 /
    # (0.394017 x 20)) = 0.2386. 3 PS of ceil(0.394017 x 22.22 x (0.2386 + 0.7614 / 3) /
    # 0.85) = 5.1 cores do not fit (31.3); 4 PS put ps-0 over 1.5 x the average (4 x
    # 0.4289), so it keeps its 5 cores and the other 3 get 2.0: 27 cores, predicted
    # 22.22 steps/s (+11 %), all of it from ps-0's part falling 0.619 -> 0.429. Too near
    # the noise for pinned_trade_min_gain: no trade at 5 % ...
    nodes, points = moved_ps(5, (4.9, 3.0), 3.6)
    proposal = propose(points, nodes=nodes, limits=Limits(cpu=27.9))
    assert proposal.is_empty
    assert "no trade of workers for more, smaller PS is predicted to gain 20%" in (
        proposal.reasons[0].message
    )
    # ... while a paced trade asked only 10 % makes it
    paced = PsScalingSettings(paced_trade_min_gain=0.1)
    traded = propose(points, nodes=nodes, limits=Limits(cpu=27.9), settings=paced)
    assert traded.roles == {"ps": RoleSpec(count=4, cpu=2.0)}
    assert "predicted 22.22 steps/s (+11%)" in traded.reasons[0].message
    assert traded.reasons[0].evidence["hot_ps"] == {"node": "j-edljob-ps-0", "cpu": 5}


def test_room_for_more_ps_than_one():
    # 3.9 + 3.9 = 7.8 cores at 60 % of 4: ceil(3.25) = 4 PS, the 32-core limit allows 4
    proposal = propose(samples(ps=(3.9, 3.9), worker=3.2), limits=Limits(cpu=32))
    assert proposal.roles == {"ps": RoleSpec(count=4)}
    proposal = propose(samples(ps=(3.9, 3.9), worker=3.2), limits=Limits(cpu=31))
    assert proposal.roles == {"ps": RoleSpec(count=3)}


def test_a_rising_speed_is_not_a_stall():
    # 15, 15, 15 -> 18, 18, 18: +20 % >= 5 %
    proposal = propose(speed=speeds([(4, 15.0)] * 3 + [(4, 18.0)] * 3))
    assert proposal.is_empty
    # and the round carries the tier's least cost per step on: 7 cores / 18 steps/s
    # (the four lowest ratios 7 / 18, 7 / 18, 7 / 18, 7 / 15), seen with the oldest
    assert proposal.reasons[0].evidence == {
        "speed_change": 0.2,
        "ps_cpu_per_step_least": {
            "ps_cpu_per_step": 0.388889,
            "seen_at": (NOW - timedelta(seconds=300)).isoformat(),
        },
    }


def test_no_ps_change_within_the_tier_cooldown():
    estimated = plan(seconds_ago=299, roles={"ps": RoleSpec(count=2)}, stage=Stage.estimate)
    proposal = propose(plans=[estimated])
    assert proposal.is_empty
    assert proposal.reasons[0].threshold == {"ps_change_interval_s": 300}
    assert propose(plans=[plan(seconds_ago=300, roles={"ps": RoleSpec(count=2)})]).roles
    hourly = PsScalingSettings(ps_change_interval_s=3600)
    assert propose(plans=[estimated], settings=hourly).is_empty
    assert propose(plans=[plan(seconds_ago=3599)], settings=hourly).roles


def test_no_ps_added_back_soon_after_a_plan_cut_the_count():
    # The create plan kept the job's 3 PS; the estimate found 2 enough 540 s ago: adding
    # PS now would reverse it within worker_tuning's 600 s (an oscillation)
    created = plan(seconds_ago=780, roles={"ps": RoleSpec(count=3)}, stage=Stage.create, plan_id=1)
    cut = plan(seconds_ago=540, roles={"ps": RoleSpec(count=2)}, stage=Stage.estimate, plan_id=2)
    proposal = propose(plans=[created, cut])
    assert proposal.is_empty
    assert proposal.reasons[0].message == (
        "plan 2 cut the PS from 3 to 2 540 s ago: no PS added back within 600 s"
    )
    # 600 s after the cut, or after a plan that added PS, the tier may grow
    later = plan(seconds_ago=600, roles={"ps": RoleSpec(count=2)}, stage=Stage.estimate, plan_id=2)
    assert propose(plans=[created, later]).roles == {"ps": RoleSpec(count=4, cpu=5.9)}
    grown = plan(seconds_ago=540, roles={"ps": RoleSpec(count=2)}, plan_id=2)
    fewer = plan(seconds_ago=780, roles={"ps": RoleSpec(count=1)}, plan_id=1)
    assert propose(plans=[fewer, grown]).roles == {"ps": RoleSpec(count=4, cpu=5.9)}


def test_ps_named_otherwise_leave_the_hosts_to_the_master():
    odd = [
        node("param-server-a", "ps", cpu=4, memory_mib=8192, index=0),
        node("param-server-b", "ps", cpu=4, memory_mib=8192, index=1),
    ]
    points = [
        s for n, cpu in zip(odd, (3.6, 3.4), strict=True) for s in series(n.name, cpu=[cpu] * 8)
    ]
    points += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    proposal = propose(points, nodes=odd + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=4, cpu=5.9)}
    assert proposal.ps_hosts == []
    assert proposal.reasons[0].evidence["ps_hosts_unknown"] == ["param-server-a", "param-server-b"]


SHRINKING = PsScalingSettings(shrink_below=0.4)


def test_the_tier_shrinks_by_default_unless_turned_off():
    # PS at 0.6 of 4 cores (15 % < 40 %), workers at 3.2 of 4 (not waiting): 1.2 cores of
    # load at 60 % of 4 cores: ceil(0.5) = 1 PS, with the tier's 2 x 8192 MiB
    points = [s for n in PS for s in series(n.name, cpu=[0.6] * 8)] + [
        s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)
    ]
    proposal = propose(points)
    assert proposal.roles == {"ps": RoleSpec(count=1, memory_mib=16384.0)}
    assert proposal.reasons[0].evidence["shrunk_from"] == {"count": 2, "cpu": 4}
    # turned off, no shrink: one more PS of today's cores tells whether the trainers'
    # unused 20 % is a wait on the exchange (they never ran another PS count)
    kept = propose(points, settings=PsScalingSettings(shrink_below=0))
    assert kept.roles == {"ps": RoleSpec(count=3, cpu=2.6)}


def test_an_over_provisioned_tier_gets_fewer_ps_with_memory_for_their_share():
    # 2 PS of 4 cores using 0.6 each (tier 15 % < 40 %): 1.2 cores of load at 60 % of 4
    # cores: ceil(0.5) = 1 PS, at 30 % (<= 85 %). It holds both shards: the tier's 2 x 8192
    # MiB = 16384, or its peak 7000 x 2/1 x 1.25 = 17500 MiB, the more
    def tier(memory_mib):
        return [
            s for n in PS for s in series(n.name, cpu=[0.6] * 8, memory_mib=[memory_mib] * 8)
        ] + [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]

    proposal = propose(tier(7000.0), settings=SHRINKING)
    assert proposal.roles == {"ps": RoleSpec(count=1, memory_mib=17500.0)}
    assert proposal.ps_hosts == ["j-edljob-ps-0.ml.svc:2222"]
    assert "over-provisioned" in proposal.reasons[0].message
    assert "PS 2 -> 1" in proposal.reasons[0].message
    assert propose(tier(6000.0), settings=SHRINKING).roles == {
        "ps": RoleSpec(count=1, memory_mib=16384.0)
    }
    # not within 1200 s of a count change (the estimate's PS, sized for workers to come):
    # from 600 s on (trim_after_s), fewer cores for each PS instead, 0.6 / 0.6 = 1.0 (a
    # count would be harder to reverse); not within 600 s
    recent = plan(seconds_ago=1199, roles={"worker": RoleSpec(count=4)}, stage=Stage.estimate)
    assert propose(tier(6000.0), plans=[recent], settings=SHRINKING).roles == {
        "ps": RoleSpec(cpu=1.0)
    }
    sooner = plan(seconds_ago=599, roles={"worker": RoleSpec(count=4)}, stage=Stage.estimate)
    assert not propose(tier(6000.0), plans=[sooner], settings=SHRINKING).roles
    settled = plan(seconds_ago=1200, roles={"worker": RoleSpec(count=4)}, stage=Stage.estimate)
    assert propose(tier(6000.0), plans=[settled], settings=SHRINKING).roles


def test_a_tier_kept_below_85_percent_busy_when_it_shrinks():
    # 0.5 and 2.5 cores of 4 (tier 37.5 %): 3.0 cores, the busiest 2.5 / 1.5 = 1.67 x the
    # mean. One PS would carry 3.0 x 1.67 = 5.0 cores' worth on 4 (125 % > 85 %): stays 2
    proposal = propose(samples(ps=(0.5, 2.5), worker=3.2), settings=SHRINKING)
    assert proposal.is_empty
    assert "below 80%: not saturated" in proposal.reasons[0].message


def test_a_lone_over_provisioned_ps_gets_fewer_cores():
    # 1 PS of 8 cores using 2.0 (25 %): 2.0 / 0.6 = 3.33 -> 3.4 cores, at 59 %
    roles = {
        "ps": RoleSpec(count=1, cpu=8, memory_mib=8192),
        "worker": RoleSpec(count=4, cpu=4, memory_mib=8192),
    }
    lone = node("j-edljob-ps-0", "ps", cpu=8, memory_mib=8192)
    points = series(lone.name, cpu=[2.0] * 8) + [
        s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)
    ]
    ctx = context(
        Stage.running, job(roles=roles), nodes=[lone, *WORKERS], samples=points, speed=STALLED
    )
    proposal = PsScalingOptimizer().propose(ctx, SHRINKING)
    assert proposal.roles == {"ps": RoleSpec(cpu=3.4)}
    assert "PS CPU 8 -> 3.4" in proposal.reasons[0].message
    # a PS migrated to another size than its role's (hot_ps) is left as it is
    bigger = node("j-edljob-ps-0", "ps", cpu=12, memory_mib=8192)
    points = series(bigger.name, cpu=[2.0] * 8) + [
        s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)
    ]
    ctx = context(
        Stage.running, job(roles=roles), nodes=[bigger, *WORKERS], samples=points, speed=STALLED
    )
    assert PsScalingOptimizer().propose(ctx, SHRINKING).is_empty


def test_over_provisioned_ps_that_no_fewer_could_carry_get_fewer_cores_each():
    # 2 PS of 4 cores using 1.5 each (37.5 % < 40 %), the workers at 3.2 of 4 (80 %): one
    # PS would carry 3.0 at ceil(3.0 / (0.6 x 4)) = 2, the count it has. Each gets 1.5 /
    # 0.6 = 2.5 cores instead (at most 3/4 of 4), at 60 %: 3 of the job's 24 cores freed
    proposal = propose(samples(ps=(1.5, 1.5), worker=3.2), settings=SHRINKING)
    assert proposal.roles == {"ps": RoleSpec(cpu=2.5)}
    why = proposal.reasons[0]
    assert "the busiest of 2 PS uses 1.50 of its 4 cores" in why.message
    assert "PS CPU 4 -> 2.5" in why.message
    assert why.evidence["shrunk_from"] == {"count": 2, "cpu": 4}
    # at 1.9 each (47.5 %) the tier is not over-provisioned: nothing shrinks
    assert (
        "shrunk_from"
        not in propose(samples(ps=(1.9, 1.9), worker=3.6), settings=SHRINKING).reasons[0].evidence
    )


def test_over_provisioned_ps_whose_fewer_would_free_too_little_get_fewer_cores_each():
    # 2 PS of 4 cores using 1.0 each (25 %), the workers at 3.2 of 4 (80 %): one PS of 4
    # would carry 2.0 at 50 % and free 4 of the job's 24 cores. With min_freed_share at
    # 17.5 % (4.2 cores) that is too little; each PS gets 1.0 / 0.6 = 1.67 -> 1.7 cores
    # instead (at most 3/4 of 4, 59 % busy), freeing 2 x 2.3 = 4.6 >= 4.2. At 20 % (4.8)
    # neither frees enough: no shrink. At 15 % (3.6) one PS of 4 frees enough
    fewer_cores = SHRINKING.model_copy(update={"min_freed_share": 0.175})
    proposal = propose(samples(ps=(1.0, 1.0), worker=3.2), settings=fewer_cores)
    assert proposal.roles == {"ps": RoleSpec(cpu=1.7)}
    assert "the busiest of 2 PS uses 1.00 of its 4 cores" in proposal.reasons[0].message
    too_little = SHRINKING.model_copy(update={"min_freed_share": 0.2})
    assert "shrunk_from" not in (
        propose(samples(ps=(1.0, 1.0), worker=3.2), settings=too_little).reasons[0].evidence
    )
    fewer_ps = SHRINKING.model_copy(update={"min_freed_share": 0.15})
    assert propose(samples(ps=(1.0, 1.0), worker=3.2), settings=fewer_ps).roles["ps"].count == 1


def test_a_tier_below_60_percent_under_a_full_limit_gives_its_spare_cores_to_the_workers():
    # 2 PS of 4 cores using 2.0 and 2.4 (55 %: above the 40 % that would shrink, below the
    # 60 % that trims), the workers at 3.2 of 4 (80 %: not waiting), the 24-core limit full
    # (2 x 4 + 4 x 4): the busiest PS's 2.4 at 75 % is 3.2 cores, 2.4 / 3.2 = 75 % busy
    # (<= 85 %), freeing 2 x 0.8 = 1.6 cores of the job's 24 (>= 5 %: 1.2)
    points = samples(ps=(2.0, 2.4), worker=3.2)
    full = Limits(cpu=24)
    proposal = propose(points, limits=full)
    assert proposal.roles == {"ps": RoleSpec(cpu=3.2)}
    why = proposal.reasons[0]
    assert why.message == (
        "the busiest of 2 PS uses 2.40 of its 4 cores (55%, below 60%): 3.2 cores run it at "
        "75% (target 75%), PS CPU 4 -> 3.2, the rest for more workers, which the CPU limit "
        "keeps out"
    )
    assert why.evidence["shrunk_from"] == {"count": 2, "cpu": 4}
    # ps-1 moved to 12288 MiB by an OOM fix: the new CPU relaunches both PS at the role's
    # size, which takes that memory too (at 8192 ps-1 would be killed again)
    fixed = [PS[0], node("j-edljob-ps-1", "ps", cpu=4, memory_mib=12288, index=1)]
    kept = propose(points, limits=full, nodes=fixed + WORKERS)
    assert kept.roles == {"ps": RoleSpec(cpu=3.2, memory_mib=12288)}
    assert "PS CPU 4 -> 3.2, each with 12288 MiB (the most a PS has now), the rest" in (
        kept.reasons[0].message
    )

    def trimmed(**kwargs) -> bool:
        return any("shrunk_from" in r.evidence for r in propose(points, **kwargs).reasons)

    # no limit, or one with room for a fifth worker of 4 cores (28 - 24): the spare cores
    # have no worker to go to, and a trim relaunches every PS
    assert not trimmed()
    assert not trimmed(limits=Limits(cpu=28))
    assert trimmed(limits=Limits(cpu=27.9))
    # a count changed within trim_after_s (600 s): the load has not settled
    assert not trimmed(
        limits=full, plans=[plan(seconds_ago=599, roles={"worker": RoleSpec(count=4)})]
    )
    assert trimmed(limits=full, plans=[plan(seconds_ago=600, roles={"worker": RoleSpec(count=4)})])
    # the job ran 6 workers within shrink_after_s (1200 s), cut to 4 since: their PS load
    # may come back with them (a cluster shortage that ends). Counted from the count in
    # force when the window opened: 6 set 1500 s ago, 4 set 700 s ago
    cut = [
        plan(seconds_ago=1500, roles={"worker": RoleSpec(count=6)}, plan_id=1),
        plan(seconds_ago=700, roles={"worker": RoleSpec(count=4)}, plan_id=2),
    ]
    assert not trimmed(limits=full, plans=cut)
    grown = [
        plan(seconds_ago=1500, roles={"worker": RoleSpec(count=3)}, plan_id=1),
        plan(seconds_ago=700, roles={"worker": RoleSpec(count=4)}, plan_id=2),
    ]
    assert trimmed(limits=full, plans=grown)
    # below shrink_below (40 %) no trim: 700 s after a count change the shrink gives each
    # PS fewer cores, the busiest at target_utilization (60 %): 1.2 / 0.6 = 2.0
    idle = samples(ps=(1.0, 1.2), worker=3.2)
    settled = [plan(seconds_ago=700, roles={"worker": RoleSpec(count=4)})]
    shrunk = propose(idle, limits=full, plans=settled)
    assert shrunk.roles == {"ps": RoleSpec(cpu=2.0)}
    assert "(28%, below 40%): 2 cores run it at 60% (target 60%)" in shrunk.reasons[0].message
    # trim_below 0 turns it off
    assert not trimmed(limits=full, settings=PsScalingSettings(trim_below=0))
    # workers at their max_count: no more of them to take the cores
    at_most = context(
        Stage.running,
        job(roles=ROLES, limits=full, bounds={"worker": RoleBounds(max_count=4)}),
        nodes=PS + WORKERS,
        samples=points,
        speed=STALLED,
    )
    assert not any(
        "shrunk_from" in r.evidence for r in PsScalingOptimizer().propose(at_most, SETTINGS).reasons
    )


def test_added_ps_that_did_not_help_go_again_and_are_not_added_again():
    # ps_scaling took 2 PS of 4 cores to 4; at the same 4 trainers the speed went
    # 20.0 -> 20.1 steps/s (+0.5 % < 2 %): back to 2 PS
    added = plan(
        seconds_ago=1150,
        roles={"ps": RoleSpec(count=4)},
        reasons=(Reason("ps_scaling", "PS 2 -> 4", {"ps_count": 2}),),
        plan_id=2,
    )
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[1.8] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    speed = speeds([(4, 20.0)] * 10 + [(4, 20.1)] * 10, every_s=120)
    proposal = propose(points, speed=speed, plans=[CREATED, added], nodes=four + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=2)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}.ml.svc:2222" for i in range(2)]
    assert "it did not help, PS 4 -> 2" in proposal.reasons[0].message
    # taken back 1000 s ago; the 2 PS saturate again: no more PS
    taken_back = plan(
        seconds_ago=1000, roles=proposal.roles, reasons=tuple(proposal.reasons), plan_id=3
    )
    again = propose(plans=[CREATED, added, taken_back])
    assert again.is_empty
    assert "more than 2 PS did not help earlier" in again.reasons[0].message


def test_added_ps_are_judged_against_the_speed_just_before_them():
    # ps_scaling took 2 PS to 4 1500 s ago: 20.0 -> 30.0 steps/s at the same 4 trainers (12
    # samples after the 90 s of restarts); hot_ps then moved ps-0 to 6 cores 700 s ago:
    # 30.1 (11 samples). Against the configuration just before the current one (the
    # migration's) the speed rose +0.3 %; against the one just before the addition
    # 30.1 / 20.0 = +50.5 %, more than 2 %: they helped, and stay. The trainers use 80 %
    # of their CPU: their unused 20 % over 6 PS (1.5 x 4) gains 1 / (0.8 + 0.2 x 4/6) =
    # +7.1 %, and every curve through 20.0 at 2 PS and 30.0 at 4 has a fifth PS gain at
    # least +6.0 %: the tier grows on (to the count the least hopeful curve sets), today's
    # 18 PS cores split over them, none more than the request.
    added = plan(
        seconds_ago=1500,
        roles={"ps": RoleSpec(count=4)},
        reasons=(Reason("ps_scaling", "PS 2 -> 4", {"ps_count": 2}),),
        plan_id=2,
    )
    moved = plan(
        seconds_ago=700,
        migrate=(NodeChange(role="ps", name="j-edljob-ps-0", cpu=6),),
        reasons=(Reason("hot_ps", "migrate to 6 cores"),),
        plan_id=3,
    )
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    four[0] = node("j-edljob-ps-0", "ps", cpu=6, memory_mib=8192, index=0)
    points = [s for n in four for s in series(n.name, cpu=[2.4] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    speed = speeds([(4, 20.0)] * 15 + [(4, 30.0)] * 14 + [(4, 30.1)] * 11)
    plans = [CREATED, added, moved]
    proposal = propose(points, speed=speed, plans=plans, nodes=four + WORKERS)
    assert proposal.reasons[0].evidence["fitted_one_more_ps_gain"][0] == 0.06
    assert "every curve fitted to the job's speeds has more PS shorten the exchange" in (
        proposal.reasons[0].message
    )
    count = proposal.roles["ps"].count
    assert count > 4
    assert proposal.roles["ps"].cpu == math.floor(18 / count * 10) / 10
    # had the speed barely moved (20.0 -> 20.0, then 20.1 after the move: +0.5 %), back
    # to 2 PS
    flat = speeds([(4, 20.0)] * 15 + [(4, 20.0)] * 14 + [(4, 20.1)] * 11)
    proposal = propose(points, speed=flat, plans=plans, nodes=four + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=2)}
    assert "at 4 trainers 20.00 -> 20.10 steps/s (+0.5%, less than 2.0%)" in (
        proposal.reasons[0].message
    )
    # trainers changed (5 workers since a plan 400 s ago): their speed is not the PS's,
    # and the PS stay
    grown = plan(seconds_ago=400, roles={"worker": RoleSpec(count=5)}, plan_id=4)
    later = speeds([(4, 20.0)] * 15 + [(4, 20.0)] * 18 + [(5, 20.1)] * 7)
    assert propose(points, speed=later, plans=[*plans, grown], nodes=four + WORKERS).is_empty


def test_ps_added_to_make_room_for_workers_are_not_judged_by_the_speed_at_the_same_trainers():
    # make_room took 2 PS to 3 while the 4 trainers kept their pace (3.2 of 4 cores, 80 %
    # > 70 %): the PS were for workers to come, not for today's speed. 1150 s later, at
    # the same 4 trainers, 20.0 -> 20.1 steps/s (+0.5 % < 2 %) would have taken an
    # addition back (and held the tier at 2 PS for good); this one stays.
    made_room = propose(samples(worker=3.2), limits=Limits(cpu=28))
    assert made_room.roles == {"ps": RoleSpec(count=3)}
    added = plan(
        seconds_ago=1150, roles=made_room.roles, reasons=tuple(made_room.reasons), plan_id=2
    )
    three = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(3)]
    # 3 PS at 2.4 of 4 cores: tier 60 %, neither saturated nor below the 40 % shrink line
    points = [s for n in three for s in series(n.name, cpu=[2.4] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    speed = speeds([(4, 20.0)] * 10 + [(4, 20.1)] * 10, every_s=120)
    proposal = propose(
        points, speed=speed, plans=[CREATED, added], nodes=three + WORKERS, limits=Limits(cpu=28)
    )
    assert proposal.is_empty
    assert "PS tier at 60% CPU, below 80%: not saturated" in proposal.reasons[0].message


def test_a_shrink_that_frees_little_of_the_job_is_not_worth_a_relaunch():
    # the lone 8-core PS at 2.0 would go to 3.4 cores, freeing 4.6: beside 40 workers of 4
    # cores (168 cores in all) that is 2.7 % < 5 %
    roles = {
        "ps": RoleSpec(count=1, cpu=8, memory_mib=8192),
        "worker": RoleSpec(count=40, cpu=4, memory_mib=8192),
    }
    lone = node("j-edljob-ps-0", "ps", cpu=8, memory_mib=8192)
    points = series(lone.name, cpu=[2.0] * 8) + [
        s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)
    ]
    ctx = context(
        Stage.running, job(roles=roles), nodes=[lone, *WORKERS], samples=points, speed=STALLED
    )
    assert PsScalingOptimizer().propose(ctx, SHRINKING).is_empty


def test_trainers_waiting_on_an_idle_tier_get_more_smaller_ps():
    # PS at 1.0 of 4 cores (25 %), workers at 1.0 of 4 (25 %): they wait, and not on PS CPU.
    # Over k PS instead of 2 the wait (75 % of a step) takes 2/k: gain 1 / (0.25 + 1.5 / k):
    # 1.333, 1.6, 1.818, 2.0, 2.154, 2.286 at k = 3..8; each step gains >= 5 % up to
    # 4 x 2 = 8 PS. Each sized for 2.0 cores x 2.286 / 8 = 0.571 at 60 %: 0.952 -> 1.0 core
    proposal = propose(samples(ps=(1.0, 1.0), worker=1.0))
    assert proposal.roles == {"ps": RoleSpec(count=8, cpu=1.0)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}.ml.svc:2222" for i in range(8)]
    evidence = proposal.reasons[0].evidence
    assert evidence["ps_count"] == 2
    assert evidence["ps_cpu_before"] == 4
    assert evidence["predicted_speed_gain"] == 1.2857
    assert "they wait on the exchange with the PS" in proposal.reasons[0].message
    assert "PS 2 -> 8, 4 -> 1 cores each" in proposal.reasons[0].message
    # Under a 22-core limit (16 for the workers): 8 PS x 1.0, 7 x 1.1 (2 x 2.154 / 7 /
    # 0.6 = 1.026), 6 x 1.2, 5 x 1.3 do not fit; 4 x 1.4 (0.8 / 0.6 = 1.333) = 5.6 does
    limited = propose(samples(ps=(1.0, 1.0), worker=1.0), limits=Limits(cpu=22))
    assert limited.roles == {"ps": RoleSpec(count=4, cpu=1.4)}
    # a smaller step per plan: 2 x 1.5 = 3 PS
    slower = propose(
        samples(ps=(1.0, 1.0), worker=1.0), settings=PsScalingSettings(network_factor=1.5)
    )
    assert slower.roles == {"ps": RoleSpec(count=3, cpu=1.5)}


def test_idle_trainers_beside_a_busy_ps_are_hot_ps_business():
    # ps-0 at 3.4 of 4 (85 %), ps-1 at 0.6: tier 50 %; the trainers wait on ps-0's CPU
    proposal = propose(samples(ps=(3.4, 0.6), worker=1.0))
    assert proposal.is_empty
    assert "j-edljob-ps-0 is at 85%, hot relative to the other PS: moving it (hot_ps)" in (
        proposal.reasons[0].message
    )


def test_a_busy_ps_beside_busy_others_does_not_stop_the_network_path():
    # ps-0 at 3.6 of 4 (90 %), ps-1 at 2.6 (65 %): 0.9 < 1.5 x 0.65, so hot_ps moves
    # nothing ("more PS would help"); the trainers at 25 % wait: more PS. Tier 77.5 %,
    # share 0.25: 8 PS as in the idle case, x 2.286. ps-0 carries (3.6 - 2.6) / 6.2 =
    # 16.1 % of the load alone, so over 8 PS it would serve 0.161 + 0.839 / 8 = 26.6 %,
    # 2.13 x the average (past TRADE_MAX_SPREAD): the role is sized for the others,
    # 6.2 x 0.839 / 8 x 2.286 / 0.6 = 2.48 -> 2.5 cores, and ps-0 keeps its 4 of today.
    proposal = propose(samples(ps=(3.6, 2.6), worker=1.0))
    assert proposal.roles == {"ps": RoleSpec(count=8, cpu=2.5)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=4.0, memory_mib=8192)]
    assert "j-edljob-ps-0, the busiest (16% of the load stays on it), 4 cores" in (
        proposal.reasons[0].message
    )
    assert proposal.reasons[0].evidence["hot_ps"] == {"node": "j-edljob-ps-0", "cpu": 4.0}


def test_no_ps_change_while_the_speed_stalls():
    # one speed sample of the last 8 at 0 (a checkpoint, a PS down): the idle trainers,
    # a saturated tier missing its dead PS, or idle PS are the stall's
    stalled = speeds([(4, v) for v in (20.0, 20.2, 19.8, 20.0, 0.0, 20.1, 19.9, 20.0)])
    for points in (
        samples(ps=(1.0, 1.0), worker=1.0),
        samples(),
        [s for n in PS for s in series(n.name, cpu=[0.6] * 8)]
        + [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)],
    ):
        proposal = propose(points, speed=stalled)
        assert proposal.is_empty
        assert "1 of the last 8 speed samples stalled" in proposal.reasons[0].message
    # 12.0 is above half the median (20.0): not a stall
    slow = speeds([(4, v) for v in (12.0, 20.2, 19.8, 20.0, 20.0, 20.1, 19.9, 20.0)])
    assert propose(samples(), speed=slow).roles == {"ps": RoleSpec(count=4, cpu=5.9)}


def test_a_network_bound_tier_is_not_shrunk():
    # tier at 15 % (below shrink_below 0.4) but the trainers wait: the shrink would cut
    # the PS the exchange needs, so the tier grows instead
    points = [s for n in PS for s in series(n.name, cpu=[0.6] * 8)] + [
        s for n in WORKERS for s in series(n.name, cpu=[1.0] * 8)
    ]
    proposal = propose(points, settings=SHRINKING)
    assert proposal.roles["ps"].count == 8


def test_resized_ps_that_did_not_help_go_back_to_their_count_and_size():
    # ps_scaling took 2 PS of 4 cores to 4 PS of 1 core (PS cores 8 -> 4); at the same 4
    # trainers 20.0 -> 20.1 steps/s (+0.5 % < 2 %): back to 2 PS of 4 cores
    added = plan(
        seconds_ago=1150,
        roles={"ps": RoleSpec(count=4, cpu=1.0)},
        reasons=(Reason("ps_scaling", "PS 2 -> 4", {"ps_count": 2, "ps_cpu_before": 4}),),
        plan_id=2,
    )
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=1.0, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[0.45] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[1.0] * 8)]
    speed = speeds([(4, 20.0)] * 10 + [(4, 20.1)] * 10, every_s=120)
    proposal = propose(points, speed=speed, plans=[CREATED, added], nodes=four + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=4)}
    assert "it did not help, PS 4 -> 2, 4 cores each as before" in proposal.reasons[0].message


def test_beside_a_moved_hot_ps_the_other_ps_are_trimmed_and_it_keeps_its_cores():
    # hot_ps moved ps-0 to 6 cores (the role's 4), which use 3.9 (65 %); ps-1 uses 1.6 of
    # 4 (40 %): the tier at 52.5 %, between shrink_below and trim_below. The workers at
    # 3.2 of 4 (80 %: not waiting), the 26-core limit full (6 + 4 + 4 x 4). ps-1's 1.6 at
    # 75 % is 2.2 cores (1.6 / 2.2 = 73 % busy, <= 85 %), freeing 4 - 2.2 = 1.8 cores of
    # the job's 26 (>= 5 %: 1.3); the new role size relaunches every PS, so ps-0 is kept
    # at its 6 cores by name.
    nodes, points = moved_ps(6, (3.9, 1.6), 3.2)
    full = Limits(cpu=26)
    proposal = propose(points, nodes=nodes, limits=full)
    assert proposal.roles == {"ps": RoleSpec(cpu=2.2)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=6, memory_mib=8192)]
    why = proposal.reasons[0]
    assert why.message == (
        "j-edljob-ps-0 keeps its 6 cores of its own; the other PS uses 1.60 of its 4 cores "
        "(52%, below 60%): 2.2 cores run it at 73% (target 75%), PS CPU 4 -> 2.2, the rest "
        "for more workers, which the CPU limit keeps out"
    )
    # a take-back of it returns both PS to the role's 4 cores: the tier's count, 2
    assert why.evidence["shrunk_from"] == {"count": 2, "cpu": 4}
    # hot_ps gave up 0.6 of ps-1's cores to ps-0 (6.6 and 3.4): the trim frees only
    # 3.4 - 2.2 = 1.2 cores, less than 1.3
    nodes[0] = replace(nodes[0], cpu=6.6)
    nodes[1] = replace(nodes[1], cpu=3.4)
    assert not any(
        "shrunk_from" in r.evidence for r in propose(points, nodes=nodes, limits=full).reasons
    )


def test_a_trim_beside_a_moved_ps_taken_back_keeps_that_ps_at_its_own_size():
    # The trim above, applied 1150 s ago (the role at 2.2 cores, ps-0 kept at 6); at the
    # same 4 trainers 20.0 -> 18.0 steps/s (-10 %): back to the role's 4 cores, which
    # relaunches every PS, ps-0 again at its own 6.
    trimmed = plan(
        seconds_ago=1150,
        roles={"ps": RoleSpec(cpu=2.2)},
        migrate=(NodeChange("ps", "j-edljob-ps-0", cpu=6, memory_mib=8192),),
        reasons=(
            Reason(
                "ps_scaling",
                "PS CPU 4 -> 2.2",
                {"ps_count": 2, "shrunk_from": {"count": 2, "cpu": 4}},
            ),
        ),
        plan_id=2,
    )
    nodes = [
        node("j-edljob-ps-0", "ps", cpu=6, memory_mib=8192, index=0),
        node("j-edljob-ps-1", "ps", cpu=2.2, memory_mib=8192, index=1),
    ]
    points = [
        s for n, used in zip(nodes, (3.9, 1.6), strict=True) for s in series(n.name, cpu=[used] * 8)
    ]
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    roles = ROLES | {"ps": RoleSpec(count=2, cpu=2.2, memory_mib=8192)}
    ctx = context(
        Stage.running,
        job(roles=roles, limits=Limits(cpu=26)),
        nodes=nodes + WORKERS,
        samples=points,
        speed=speeds([(4, 20.0)] * 10 + [(4, 18.0)] * 10, every_s=120),
        plans=[CREATED, trimmed],
    )
    proposal = PsScalingOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles == {"ps": RoleSpec(cpu=4)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=6, memory_mib=8192)]
    assert "back to 2 PS of 4 cores, and no more shrinking" in proposal.reasons[0].message


def test_a_shrink_that_slowed_the_job_is_taken_back_and_not_repeated():
    # ps_scaling cut 2 PS of 4 cores to 1 (PS cores 8 -> 4) 1150 s ago; at the same 4
    # trainers 20.0 -> 18.0 steps/s (-10 %, beyond 2 %): back to 2 PS of 4 cores
    shrunk = plan(
        seconds_ago=1150,
        roles={"ps": RoleSpec(count=1, memory_mib=16384)},
        reasons=(
            Reason(
                "ps_scaling", "PS 2 -> 1", {"ps_count": 2, "shrunk_from": {"count": 2, "cpu": 4}}
            ),
        ),
        plan_id=2,
    )
    lone = [node("j-edljob-ps-0", "ps", cpu=4, memory_mib=16384, index=0)]
    points = series(lone[0].name, cpu=[3.0] * 8)
    points += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    speed = speeds([(4, 20.0)] * 10 + [(4, 18.0)] * 10, every_s=120)
    proposal = propose(points, speed=speed, plans=[CREATED, shrunk], nodes=lone + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=4)}
    assert "back to 2 PS of 4 cores, and no more shrinking" in proposal.reasons[0].message
    # at -1 % (within 2 %) the shrink stays
    flat = speeds([(4, 20.0)] * 10 + [(4, 19.8)] * 10, every_s=120)
    assert propose(points, speed=flat, plans=[CREATED, shrunk], nodes=lone + WORKERS).is_empty
    # once taken back, an idle tier is not shrunk again
    undone = plan(seconds_ago=1300, roles=proposal.roles, reasons=tuple(proposal.reasons))
    idle = [s for n in PS for s in series(n.name, cpu=[0.6] * 8)]
    idle += [s for n in WORKERS for s in series(n.name, cpu=[3.2] * 8)]
    again = propose(idle, plans=[undone])
    assert again.is_empty
    assert "below 80%: not saturated" in again.reasons[0].message


def test_network_bound_ps_are_added_only_once_the_last_were_judged_and_while_they_pay():
    # ps_scaling took 2 PS to 4 500 s ago: they are judged at 600 s, nothing before
    added = plan(
        seconds_ago=500,
        roles={"ps": RoleSpec(count=4)},
        reasons=(Reason("ps_scaling", "PS 2 -> 4", {"ps_count": 2}),),
    )
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[1.0] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[1.0] * 8)]
    proposal = propose(points, plans=[added], nodes=four + WORKERS)
    assert proposal.is_empty
    assert "PS added 500 s ago (plan 1) are judged 600 s after" in proposal.reasons[0].message
    # unless they already paid: at the same 4 trainers 20.0 -> 26.0 steps/s (+30 %, 11
    # samples before, 7 after the 90 s of restarts) from 8 to 16 PS cores
    created = plan(
        stage=Stage.create, roles={"ps": RoleSpec(count=2, cpu=4), "worker": RoleSpec(count=4)}
    )
    speed = speeds([(4, 20.0)] * 12 + [(4, 26.0)] * 8)
    # (PS at 1.0 of 4, workers at 25 %. The curves through 20.0 at 2 PS and 26.0 at 4, each
    # PS of 4 cores: t0 + t5 / n (or t4 / p) gives 1 / (0.02692 + 0.04615 x 4 / k), t0 +
    # t6 w / n^2 (t6 = 0.01538, t0 = 0.03462) 1 / (0.03462 + 0.06154 / k^2), the least
    # hopeful: +3.7 % at 5 PS, +5.9 % at 6, +7.2 % at 7 (+1.2 % on 6, below 2 %): 6 PS,
    # each 4.0 x 1.059 / 6 / 0.6 = 1.18 -> 1.2 cores)
    proposal = propose(points, speed=speed, plans=[created, added], nodes=four + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=6, cpu=1.2)}
    # the same speed before and after: not yet
    flat = speeds([(4, 20.0)] * 20)
    assert propose(points, speed=flat, plans=[created, added], nodes=four + WORKERS).is_empty
    # workers at 2.6 of 4 (65 %) wait 35 % of a step: a third PS for 2 predicts
    # 1 / (0.65 + 0.35 x 2/3) = +13.2 %, below a 15 % network_min_gain
    proposal = propose(
        samples(ps=(1.0, 1.0), worker=2.6), settings=PsScalingSettings(network_min_gain=0.15)
    )
    assert proposal.is_empty
    assert "one more PS is predicted to gain +13.2%, less than 15%" in proposal.reasons[0].message


def test_network_bound_ps_step_to_the_fewest_the_wait_says_pay_when_the_fit_cannot_tell():
    # 4 PS at 1.0 of 4 cores (25 %), workers at 2.6 of 4 (65 %): they wait 35 % of a
    # step. A fifth PS predicts 1 / (0.65 + 0.35 x 4/5) = +7.5 %, below a 10 %
    # network_min_gain, but 6 PS (1.5 x 4) predict 1 / (0.65 + 0.35 x 4/6) = +13.2 %. The
    # job ran one configuration, so the fitted curves cannot tell (0 to +50 %): the wait
    # predicts, and the tier steps to 6 PS (a seventh adds 1.176 / 1.132 = +3.9 %, below
    # 10 %), each sized for 4.0 cores of load x 1.132 / 6 / 0.6 = 1.26 -> 1.3 cores
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[1.0] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[2.6] * 8)]
    settings = PsScalingSettings(network_min_gain=0.1)
    proposal = propose(points, nodes=four + WORKERS, settings=settings)
    assert proposal.roles == {"ps": RoleSpec(count=6, cpu=1.3)}
    assert proposal.reasons[0].evidence["predicted_speed_gain"] == 0.1321
    assert "PS 4 -> 6, 4 -> 1.3 cores each" in proposal.reasons[0].message
    # at most 1.25 x today's (5 PS, +7.5 %) when exploring: no PS
    near = PsScalingSettings(network_min_gain=0.1, network_explore_factor=1.25)
    held = propose(points, nodes=four + WORKERS, settings=near)
    assert held.is_empty
    assert "one more PS is predicted to gain +7.5%, less than 10%" in held.reasons[0].message
    # at 1.5 x today's but a 15 % least gain: 6 PS predict too little
    held = propose(
        points,
        nodes=four + WORKERS,
        settings=PsScalingSettings(network_min_gain=0.15),
    )
    assert held.is_empty
    assert "6 PS (1.5 x today's) are predicted to gain +13.2%, less than 15%" in (
        held.reasons[0].message
    )


def _ps_count_changed(before, after, speed_before, speed_after, cpu_before=4):
    """A job whose estimate took ``before`` PS of ``cpu_before`` cores to ``after`` of 4
    600 s ago, with 10 speed samples at 4 trainers each side (the first after it within
    the restarts' 90 s left out)."""
    created = plan(
        stage=Stage.create,
        seconds_ago=3600,
        roles={"ps": RoleSpec(count=before, cpu=cpu_before), "worker": RoleSpec(count=4, cpu=4)},
    )
    estimated = plan(
        stage=Stage.estimate,
        seconds_ago=600,
        roles={"ps": RoleSpec(count=after, cpu=4)},
        plan_id=2,
    )
    speed = speeds([(4, speed_before)] * 10 + [(4, speed_after)] * 10)
    return [created, estimated], speed


def test_no_network_bound_ps_when_the_fitted_curves_say_more_ps_do_not_pay():
    # 4 PS at 1.0 of 4 cores (25 %), workers at 1.0 of 4 (25 %): the wait rule predicts
    # one more PS gains 1 / (0.25 + 0.75 x 4/5) = +17.6 %. But the job ran 20.0 steps/s at
    # 2 PS and 20.0 at 4: every curve through both (a constant, with PS parts of 0) gains
    # 0 from a fifth PS, below 5 %: the trainers wait on something else.
    plans, speed = _ps_count_changed(2, 4, 20.0, 20.0)
    four = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(4)]
    points = [s for n in four for s in series(n.name, cpu=[1.0] * 8)]
    points += [s for n in WORKERS for s in series(n.name, cpu=[1.0] * 8)]
    proposal = propose(points, speed=speed, plans=plans, nodes=four + WORKERS)
    assert proposal.is_empty
    assert "every curve that fits the job's speeds has up to 16 PS gain at most +0.0%" in (
        proposal.reasons[0].message
    )
    assert proposal.reasons[0].evidence["fitted_one_more_ps_gain"] == [0.0, 0.0, 0.0]


def test_network_bound_ps_when_the_fitted_curves_agree_more_ps_pay():
    # 2 PS at 1.0 of 4 (25 %), workers at 2.6 of 4 (65 %): the wait rule predicts a third
    # PS gains 1 / (0.65 + 0.35 x 2/3) = +13.2 %, below a 15 % network_min_gain. The job
    # ran 10.0 steps/s at 1 PS of 8 cores and 20.0 at 2 of 4: the count alone changed.
    # The curves through both that rank within the noise, a third PS of 4 cores: t5 / n
    # (0.1 / n: 30.0 at 3 PS, +50 %), t0 + t6 w / n^2 (1 / 10 = t0 + 4 t6, 1 / 20 = t0 +
    # t6: t6 = 1 / 60, t0 = 1 / 30; 1 / (1 / 30 + 4 / 540) = 24.5 at 3 PS, +22.7 %), t4 /
    # p + t6 w / n^2 (t4 = 0.2667: 1 / (0.2667 / 12 + 4 / 540) = 33.75, +68.75 %) and the
    # like: at least +22.7 % >= 15 %. The least hopeful curve, which no PS core moves, sets
    # the count: 1 / (1 / 30 + 1 / (15 k^2)) is 26.67 at 4 PS (+8.6 % on 3), 27.78 at 5
    # (+4.2 %), 28.42 at 6 (+2.3 %), 28.82 at 7 (+1.4 %, below network_step_gain 2 %):
    # 6 PS, +42.1 %, each sized for 2.0 cores of load x 1.421 / 6 / 0.6 = 0.79 -> 0.8
    settings = PsScalingSettings(network_min_gain=0.15)
    plans, speed = _ps_count_changed(1, 2, 10.0, 20.0, cpu_before=8)
    points = samples(ps=(1.0, 1.0), worker=2.6)
    proposal = propose(points, speed=speed, plans=plans, settings=settings)
    assert proposal.roles == {"ps": RoleSpec(count=6, cpu=0.8)}
    low, _, high = proposal.reasons[0].evidence["fitted_one_more_ps_gain"]
    assert (low, high) == (0.2273, 0.6875)
    assert proposal.reasons[0].evidence["predicted_speed_gain"] == 0.4211
    assert "the least of them chose the count" in proposal.reasons[0].message
    # with a network_step_gain of 5 %, a fifth PS gains too little (+4.2 %): 4 PS of
    # 2.0 x 1.333 / 4 / 0.6 = 1.11 -> 1.2 cores
    steps = PsScalingSettings(network_min_gain=0.15, network_step_gain=0.05)
    stepped = propose(points, speed=speed, plans=plans, settings=steps)
    assert stepped.roles == {"ps": RoleSpec(count=4, cpu=1.2)}
    # when the count and the PS cores changed together (1 PS of 4 cores -> 2 of 4), the
    # curve that credits the cores instead (t4 / p = 0.4 / p) gains +50 % at 3 PS of 4,
    # and the least hopeful one is the same t0 + t6 w / n^2: 6 PS of 0.8 cores again
    plans, speed = _ps_count_changed(1, 2, 10.0, 20.0)
    together = propose(points, speed=speed, plans=plans, settings=settings)
    assert together.roles == {"ps": RoleSpec(count=6, cpu=0.8)}
    # without the history the wait rule alone decides too: no PS
    assert propose(points, settings=settings).is_empty


def test_network_bound_ps_split_the_cores_the_limit_leaves_when_sized_ones_do_not_fit():
    # As in the idle-tier case (PS and workers at 25 %: gain 1 / (0.25 + 1.5 / k)), under
    # a 20-core limit: the 4 workers hold 16, the tier gets 4. Sized at 60 %, 3 PS of
    # 2.0 x 1.333 / 3 / 0.6 = 1.48 -> 1.5 cores (4.5) are the fewest and do not fit. The
    # 4 cores split instead: 8 PS of 0.5 would each carry 2.0 x 2.286 / 8 = 0.571 > 0.85
    # x 0.5; 7 of 0.5 carry 0.615, 6 of 0.6 carry 0.667 > 0.51, 5 of 0.8 carry 0.727 >
    # 0.68; 4 of 1.0 carry 2.0 x 1.6 / 4 = 0.8 <= 0.85: PS 2 -> 4, 4 -> 1 core each
    points = samples(ps=(1.0, 1.0), worker=1.0)
    proposal = propose(points, limits=Limits(cpu=20))
    assert proposal.roles == {"ps": RoleSpec(count=4, cpu=1.0)}
    assert "PS 2 -> 4, 4 -> 1 cores each" in proposal.reasons[0].message
    # 19.9 cores: 3.9 for the tier; 4 PS of 0.9 would be 0.8 / 0.9 = 89 % busy; 3 of 1.3
    # carry 2.0 x 1.333 / 3 = 0.889, 68 %
    assert propose(points, limits=Limits(cpu=19.9)).roles == {"ps": RoleSpec(count=3, cpu=1.3)}
    # 17.9 cores: 1.9 for the tier, 3 PS of 0.6 would be 148 % busy: no PS
    short = propose(points, limits=Limits(cpu=17.9))
    assert short.is_empty
    assert "one more PS would exceed the job's limits" in short.reasons[0].message


def test_busy_looking_trainers_wait_on_the_ps_when_the_fit_and_their_wait_agree():
    # Workers at 3.0 of 4 (75 %, above worker_wait 70 %), the tier at 50 %: not saturated,
    # and no wait their CPU shows alone. But the job ran 10.0 steps/s at 1 PS of 8 cores
    # and 20.0 at 2 of 4: every curve through both gains at least +22.7 % from a third PS
    # (as above), and the trainers' 25 % spread over 3 PS instead of 2 gains 1 / (0.75 +
    # 0.25 x 2/3) = +9.1 % >= 5 %. The least hopeful curve sets the count, 6 PS (as
    # above, +42.1 %). Trainers that keep their pace give up no cores for them: today's
    # 8 PS cores over 6, 1.33 -> 1.3 each (the busiest carrying 4.0 x 1.421 / 6 = 0.95,
    # 73 %, within max_busy 85 %)
    plans, speed = _ps_count_changed(1, 2, 10.0, 20.0, cpu_before=8)
    points = samples(ps=(2.0, 2.0), worker=3.0)
    proposal = propose(points, speed=speed, plans=plans)
    assert proposal.roles == {"ps": RoleSpec(count=6, cpu=1.3)}
    assert (
        "the trainers use 75% of theirs, but every curve fitted to the job's speeds has more "
        "PS shorten the exchange" in proposal.reasons[0].message
    )
    # without the history the fit cannot tell: one more PS, to learn. A fourth would
    # add 1.143 / 1.091 = +4.8 % < 5 % by the trainers' wait: 3 PS of 8 / 3 = 2.67 -> 2.6
    alone = propose(points)
    assert alone.roles == {"ps": RoleSpec(count=3, cpu=2.6)}
    assert "the job never ran another PS count" in alone.reasons[0].message
    # at 3.6 of 4 (90 %) their wait over 3 PS gains 1 / (0.9 + 0.1 x 2/3) = +3.4 % < 5 %:
    # however sure the fit, the trainers compute nearly all of a step
    busy = propose(samples(ps=(2.0, 2.0), worker=3.6), speed=speed, plans=plans)
    assert busy.is_empty


def test_no_ps_over_the_limit_soon_after_the_workers_grew():
    # The saturated tier wants 4 PS; under 27.9 cores not even a third fits (3 x 4 + 4
    # workers x 4 = 28), so the guard would cut workers; a plan took them from 2 to 4
    # 300 s ago: not yet
    fewer = plan(seconds_ago=1500, roles={"worker": RoleSpec(count=2)}, plan_id=1)
    grown = plan(seconds_ago=300, roles={"worker": RoleSpec(count=4)}, plan_id=2)
    proposal = propose(plans=[fewer, grown], limits=Limits(cpu=27.9))
    assert proposal.is_empty
    assert proposal.reasons[0].message == (
        "PS 2 -> 3 would exceed the job's limits, and the guard would cut the workers plan 2 "
        "added 300 s ago: not within 600 s"
    )
    # 600 s after, the workers are traded for smaller PS, the guard cutting the workers to
    # what fits beside them rather than whatever PS of 4 cores leave: 7.0 / 20 = 0.35 PS
    # core-s per step, ps-0 3.6 against 3.4 holds a hot part of 0.2 / 7 = 2.9 %; 3
    # trainers at 10 steps/s each beside 3 PS, the busiest 35.2 % of the traffic:
    # 0.35 x 30 x 0.352 / 0.85 = 4.4 cores each, 13.2 + 12 = 25.2 cores
    later = plan(seconds_ago=600, roles={"worker": RoleSpec(count=4)}, plan_id=2)
    assert propose(plans=[fewer, later], limits=Limits(cpu=27.9)).roles == {
        "ps": RoleSpec(count=3, cpu=4.4)
    }
    # Under 28 cores the third of the 4 wanted fits beside the workers: it comes, and no
    # worker goes
    assert propose(plans=[fewer, grown], limits=Limits(cpu=28)).roles == {"ps": RoleSpec(count=3)}
    # within the limits, the PS come
    assert propose(plans=[fewer, grown], limits=Limits(cpu=32)).roles == {"ps": RoleSpec(count=4)}


def test_resized_ps_keep_the_most_memory_any_ps_has():
    # ps-0 was moved to 12000 MiB by an OOM fix; the role asks 8192. The network-bound
    # plan relaunches every PS at the role's size (1.0 core): 12000 MiB each, so ps-0 is
    # not killed again
    fixed = [
        node("j-edljob-ps-0", "ps", cpu=4, memory_mib=12000, index=0),
        node("j-edljob-ps-1", "ps", cpu=4, memory_mib=8192, index=1),
    ]
    proposal = propose(samples(ps=(1.0, 1.0), worker=1.0), nodes=fixed + WORKERS)
    assert proposal.roles == {"ps": RoleSpec(count=8, cpu=1.0, memory_mib=12000)}


def test_a_ps_that_cannot_grow_trades_workers_for_more_smaller_ps():
    # 1 PS of 4 cores at 100 % and 4 workers of 4 at 50 %, speed 20.0, a 20-core limit
    # the job fills. Two or three PS of 4 cores do not fit beside the workers (the guard
    # would cut workers whatever the PS then serve), so: PS core-s per step 4 / 20 = 0.2;
    # the trainers at full pace run 20 / 0.5 / 4 = 10 steps/s each. 2 PS (half the
    # traffic each) for 4 workers: 0.2 x 40 x 0.5 / 0.85 = 4.8 cores each, 25.6 cores in
    # all; for 3 workers 3.6 each, 7.2 + 12 = 19.2 cores: 30 steps/s (3.6 x 0.85 / 0.1
    # = 30.6 served), +50 %. Three PS for 3 workers (2.4 cores each) predict no more.
    lone = [node("j-edljob-ps-0", "ps", cpu=4, memory_mib=8192, index=0)]
    points = series(lone[0].name, cpu=[4.0] * 8)
    points += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    roles = ROLES | {"ps": RoleSpec(count=1, cpu=4, memory_mib=8192)}
    ctx = context(
        Stage.running,
        job(roles=roles, namespace="ml", limits=Limits(cpu=20)),
        nodes=lone + WORKERS,
        samples=points,
        speed=STALLED,
    )
    proposal = PsScalingOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=3.6)}
    assert proposal.ps_hosts == [f"j-edljob-ps-{i}.ml.svc:2222" for i in range(2)]
    message = proposal.reasons[0].message
    assert "predicted 30.00 steps/s (+50%)" in message
    assert (
        "PS 1 -> 2, 4 -> 3.6 cores each; the guard fits the workers to the limits beside "
        "them: 4 -> 3" in message
    )
    assert proposal.reasons[0].evidence["traded_from"] == {
        "ps_count": 1,
        "ps_cpu": 4,
        "workers": 4,
        "worker_cpu": 4,
        "knee": False,
    }
    # a trade predicted to gain less than trade_min_gain is not made, nor is the guard
    # left to cut the workers
    proposal = PsScalingOptimizer().propose(ctx, PsScalingSettings(trade_min_gain=0.6))
    assert proposal.is_empty
    assert "no trade of workers for more, smaller PS is predicted to gain 60%" in (
        proposal.reasons[0].message
    )


def applied_trade(ps_count, ps_cpu, count, cpu):
    """ps_scaling's trade from ``ps_count`` PS of ``ps_cpu`` cores and 4 workers of 4 to
    ``count`` PS of ``cpu`` cores and 3 workers, applied 630 s ago."""
    before = {"ps_count": ps_count, "ps_cpu": ps_cpu, "workers": 4, "worker_cpu": 4}
    return plan(
        seconds_ago=630,
        roles={"ps": RoleSpec(count=count, cpu=cpu), "worker": RoleSpec(count=3)},
        reasons=(Reason("ps_scaling", "trade", {"ps_count": ps_count, "traded_from": before}),),
        plan_id=2,
    )


def test_a_trade_that_did_not_help_goes_back_to_the_counts_and_sizes_before_it():
    # The trade above, applied 630 s ago: 4 trainers at 20.0 steps/s before, 3 at 20.1
    # after (+0.5 %, less than 2 %): back to 1 PS of 4 cores, and no trade again
    created = plan(
        stage=Stage.create,
        seconds_ago=3600,
        roles={"ps": RoleSpec(count=1, cpu=4), "worker": RoleSpec(count=4, cpu=4)},
    )
    traded = applied_trade(1, 4, 2, 3.6)
    two = [node(f"j-edljob-ps-{i}", "ps", cpu=3.6, memory_mib=8192, index=i) for i in range(2)]
    three = WORKERS[:3]
    points = [s for n in two for s in series(n.name, cpu=[2.0] * 8)]
    points += [s for n in three for s in series(n.name, cpu=[3.0] * 8)]
    speed = speeds([(4, 20.0)] * 10 + [(3, 20.1)] * 10)
    roles = {
        "ps": RoleSpec(count=2, cpu=3.6, memory_mib=8192),
        "worker": RoleSpec(count=3, cpu=4, memory_mib=8192),
    }

    def judged(plans):
        ctx = context(
            Stage.running,
            job(roles=roles, namespace="ml", limits=Limits(cpu=20)),
            nodes=two + three,
            samples=points,
            speed=speed,
            plans=plans,
        )
        return PsScalingOptimizer().propose(ctx, SETTINGS)

    proposal = judged([created, traded])
    assert proposal.roles == {"ps": RoleSpec(count=1, cpu=4)}
    assert proposal.reasons[0].message.endswith(
        "20.00 -> 20.10 steps/s (+0.5%, less than 2.0%): it did not help, back to 1 PS of 4 "
        "cores, and no more trades (the workers, 4 of 4 cores before it, are worker_tuning's "
        "to grow again)"
    )
    # no ceiling on the PS count: fewer workers beside more PS is no evidence on more PS
    assert "taken_back_to" not in proposal.reasons[0].evidence

    # a plan applied 20 s ago, 610 s after the trade (judge_after_s 600 after it: the
    # verdict was due), set the workers (worker_tuning gave one back to the PS, say): the
    # speed since is its doing too, and the trade is judged no more
    def later(seconds_ago, spec):
        return plan(seconds_ago=seconds_ago, roles={"worker": spec}, plan_id=3)

    unjudged = judged([created, traded, later(20, RoleSpec(count=2))])
    assert "trade_undone" not in unjudged.reasons[0].evidence
    assert not [r for r in unjudged.reasons if "it did not help" in r.message]
    # the same 300 s after the trade, before the verdict fell due: it is judged (else the
    # trade would never be); and a plan that set only the workers' memory changes nothing
    for spec, seconds_ago in ((RoleSpec(count=2), 330), (RoleSpec(memory_mib=9000), 20)):
        again = judged([created, traded, later(seconds_ago, spec)])
        assert again.roles == {"ps": RoleSpec(count=1, cpu=4)}
        assert "it did not help" in again.reasons[0].message

    # at +10 % it stays, and the PS, peaking at 2.0 of 3.6 cores while the workers keep
    # their pace (75 % of their CPU), get 2.0 / 0.85 = 2.4 cores (at most 3/4 of 3.6)
    def after(ps_used):
        used = [s for n in two for s in series(n.name, cpu=[ps_used] * 8)]
        used += [s for n in three for s in series(n.name, cpu=[3.0] * 8)]
        ctx = context(
            Stage.running,
            job(roles=roles, namespace="ml", limits=Limits(cpu=20)),
            nodes=two + three,
            samples=used,
            speed=speeds([(4, 20.0)] * 10 + [(3, 22.0)] * 10),
            plans=[created, traded],
        )
        return PsScalingOptimizer().propose(ctx, SETTINGS)

    sized = after(2.0)
    assert sized.roles == {"ps": RoleSpec(cpu=2.4)}
    assert "2.00 / 0.85 = 2.4 cores each, PS CPU 3.6 -> 2.4" in sized.reasons[0].message
    assert sized.reasons[0].evidence["shrunk_from"] == {"count": 2, "cpu": 3.6}
    # at a peak of 2.5 (3.0 cores, over 2.7) they keep their size; the job never ran
    # another PS count beside 3 trainers, so one more PS of today's 7.2 cores comes next
    kept = after(2.5)
    assert "shrunk_from" not in kept.reasons[0].evidence
    assert kept.roles == {"ps": RoleSpec(count=3, cpu=2.4)}


def test_a_trade_is_judged_against_the_speed_just_before_it():
    # The trade above, applied 630 s ago, on a PS load that grows: 4 trainers ran 30.0
    # steps/s for 14 samples, then 22.0 for the 6 just before it (a 7th within the 90 s of
    # restarts left out); 3 trainers 24.0 after. Against the mean of all 20, (14 x 30 + 6 x
    # 22) / 20 = 27.6, that is -13 %; against the 6 just before, 24 / 22 = +9.1 % (more
    # than 2 % and two standard errors, 2 x hypot(0.01 / sqrt(6), 0.01 / sqrt(10)) =
    # 1.0 %): it paid, and the PS, peaking at 2.0 of 3.6 cores while the workers keep
    # their pace (75 %), get 2.0 / 0.85 = 2.4 cores
    created = plan(
        stage=Stage.create,
        seconds_ago=3600,
        roles={"ps": RoleSpec(count=1, cpu=4), "worker": RoleSpec(count=4, cpu=4)},
    )
    traded = applied_trade(1, 4, 2, 3.6)
    two = [node(f"j-edljob-ps-{i}", "ps", cpu=3.6, memory_mib=8192, index=i) for i in range(2)]
    three = WORKERS[:3]
    points = [s for n in two for s in series(n.name, cpu=[2.0] * 8)]
    points += [s for n in three for s in series(n.name, cpu=[3.0] * 8)]
    speed = speeds([(4, 30.0)] * 14 + [(4, 22.0)] * 7 + [(3, 24.0)] * 10)
    roles = {
        "ps": RoleSpec(count=2, cpu=3.6, memory_mib=8192),
        "worker": RoleSpec(count=3, cpu=4, memory_mib=8192),
    }
    ctx = context(
        Stage.running,
        job(roles=roles, namespace="ml", limits=Limits(cpu=20)),
        nodes=two + three,
        samples=points,
        speed=speed,
        plans=[created, traded],
    )
    proposal = PsScalingOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles == {"ps": RoleSpec(cpu=2.4)}
    assert "the trade paid" in proposal.reasons[0].message


def test_no_trade_where_a_hot_part_leaves_the_other_ps_idle():
    # 2 PS of 2 cores, ps-0 at 2.0 (hot), ps-1 at 0.4; workers at 0.8 of 4 (20 %), no room
    # under a 20-core limit. ps-0 holds (2.0 - 0.4) / 2.4 = 2/3 of the traffic as its own
    # part: over 3 PS it still serves 2/3 + 1/9 = 78 %, and 3 PS of its size would serve
    # on average 1 / (3 x 0.78) = 43 % of its load, 4 PS 33 %, less than 2/3: cores the
    # other PS leave idle. No trade: moving ps-0 alone is hot_ps's
    two = [node(f"j-edljob-ps-{i}", "ps", cpu=2, memory_mib=8192, index=i) for i in range(2)]
    points = series(two[0].name, cpu=[2.0] * 8) + series(two[1].name, cpu=[0.4] * 8)
    points += [s for n in WORKERS for s in series(n.name, cpu=[0.8] * 8)]
    roles = ROLES | {"ps": RoleSpec(count=2, cpu=2, memory_mib=8192)}
    ctx = context(
        Stage.running,
        job(roles=roles, namespace="ml", limits=Limits(cpu=20)),
        nodes=two + WORKERS,
        samples=points,
        speed=STALLED,
    )
    proposal = PsScalingOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty
    assert "hot relative to the other PS: moving it (hot_ps) helps first" in (
        proposal.reasons[0].message
    )


def test_a_ps_moved_to_more_cores_counts_at_its_size_against_the_limit():
    # The tier at 87.5 % makes room for workers: a third PS of 4 cores fits a 28-core
    # limit (12 + 16), unless ps-0 runs moved to 5 cores: 29, and the guard would cut a
    # worker for it
    nodes, points = moved_ps(5, (4.5, 3.4), 3.2)
    proposal = propose(points, nodes=nodes, limits=Limits(cpu=28))
    assert proposal.is_empty
    assert "one more PS would exceed the job's limits" in proposal.reasons[0].message
    assert propose(points, nodes=nodes, limits=Limits(cpu=29)).roles == {"ps": RoleSpec(count=3)}


def _knee_context(plans=(), points=None, speed=STALLED, gone=(), limit=20):
    """One PS of 4 cores at 100 %, 4 workers of 4 at 50 %, speed 20.0, a full 20-core
    limit (the trade test above), with the given plans, samples, removed nodes and
    CPU limit."""
    lone = [node("j-edljob-ps-0", "ps", cpu=4, memory_mib=8192, index=0)]
    if points is None:
        points = series(lone[0].name, cpu=[4.0] * 8)
        points += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    roles = ROLES | {"ps": RoleSpec(count=1, cpu=4, memory_mib=8192)}
    return context(
        Stage.running,
        job(roles=roles, namespace="ml", limits=Limits(cpu=limit)),
        nodes=lone + WORKERS,
        samples=points,
        speed=speed,
        plans=list(plans),
        gone_nodes=list(gone),
    )


def _carried(cost: float, seconds_ago: float, plan_id: int = 1):
    """A no-change round of ps_scaling's that carried a least cost seen ``seconds_ago``."""
    seen = (NOW - timedelta(seconds=seconds_ago)).isoformat()
    return plan(
        status=PlanStatus.no_change,
        seconds_ago=300,
        plan_id=plan_id,
        reasons=(
            Reason(
                "ps_scaling",
                "not saturated",
                {"ps_cpu_per_step_least": {"ps_cpu_per_step": cost, "seen_at": seen}},
            ),
        ),
    )


def _traded(ctx):
    return PsScalingOptimizer().propose(ctx, SETTINGS)


def test_a_tier_past_its_knee_trades_on_the_least_cost_per_step_it_ran_at():
    # In today's window the PS burns 0.1995 core-s per step at its most efficient (the
    # median of the four lowest ratios, (4 / 20.1 + 4 / 20.0) / 2). 20 minutes ago it
    # ran at 0.1, below 0.8 x 0.1995 = 0.1596: past its knee, smaller PS serve a step
    # with fewer cores. Its 4 cores serve 20 steps/s like 0.1 x 20 = 2.0 cores at the
    # knee's cost: no PS of the trade gets more. At 0.1, 2 PS for 4 workers at full
    # pace (40 steps/s) would need 0.1 x 40 x 0.5 / 0.85 = 2.35 -> 2.4 cores each, so
    # they get 2.0: 4 + 16 = 20 cores, 2.0 x 0.85 / (0.1 x 0.5) = 34 steps/s, +70 %
    # (3 PS for 4 workers need 1.6 each, 4.8 + 16 > 20; for 3 workers 1.2 each: 30).
    # On today's window it is 3.6 cores each.
    proposal = _traded(_knee_context([_carried(0.1, 1200)]))
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=2.0)}
    message = proposal.reasons[0].message
    assert "0.1000 PS core-s per step at the tier's most efficient" in message
    assert "predicted 34.00 steps/s (+70%). PS 1 -> 2, 4 -> 2 cores each" in message
    # Under 22 cores, 2 PS of 2.4 would fit beside the 4 workers (20.8 cores), but each
    # past the 2.0 cores the knee serves; 3 PS of 0.1 x 40 / 3 / 0.85 = 1.57 -> 1.6 cores
    # are below it: 4.8 + 16 = 20.8 cores, 40 steps/s, +100 %
    roomier = _traded(_knee_context([_carried(0.1, 1200)], limit=22))
    assert roomier.roles == {"ps": RoleSpec(count=3, cpu=1.6)}
    assert "predicted 40.00 steps/s (+100%). PS 1 -> 3, 4 -> 1.6 cores each" in (
        roomier.reasons[0].message
    )
    evidence = proposal.reasons[0].evidence
    assert evidence["traded_from"]["knee"] is True
    # the round carries the least cost on, with when the tier ran at it
    seen = (NOW - timedelta(seconds=1200)).isoformat()
    assert evidence["ps_cpu_per_step_least"] == {"ps_cpu_per_step": 0.1, "seen_at": seen}
    # a least cost seen more than half an hour ago says nothing of today's
    stale = _traded(_knee_context([_carried(0.1, 1801)]))
    assert stale.roles == {"ps": RoleSpec(count=2, cpu=3.6)}
    assert stale.reasons[0].evidence["traded_from"]["knee"] is False
    # nor one only a little below the window's (0.16 >= 0.1596): the noise of a minimum
    near = _traded(_knee_context([_carried(0.16, 600)]))
    assert near.roles == {"ps": RoleSpec(count=2, cpu=3.6)}
    # whatever the round proposes, it carries its least on: here today's window's, the
    # PS at 1.0 core, (1 / 20.1 + 1 / 20.0) / 2 = 0.049876 core-s per step, seen from
    # the oldest of the four lowest ratios (1 / 20.0, 5 minutes ago)
    idle = series("j-edljob-ps-0", cpu=[1.0] * 8)
    idle += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    calm = _traded(_knee_context([_carried(0.1, 1200)], points=idle))
    assert calm.reasons[0].evidence["ps_cpu_per_step_least"] == {
        "ps_cpu_per_step": 0.049876,
        "seen_at": (NOW - timedelta(seconds=300)).isoformat(),
    }


def test_after_a_knee_trade_that_did_not_pay_trades_count_on_the_window():
    def undone(knee: bool):
        before = {"ps_count": 1, "ps_cpu": 4, "workers": 4, "worker_cpu": 4, "knee": knee}
        return plan(
            seconds_ago=2400,
            plan_id=2,
            roles={"ps": RoleSpec(count=1, cpu=4)},
            reasons=(Reason("ps_scaling", "back", {"trade_undone": before}),),
        )

    assert _traded(_knee_context([undone(True), _carried(0.1, 1200, plan_id=3)])).roles == {
        "ps": RoleSpec(count=2, cpu=3.6)
    }
    # after a trade on the window's cost that did not pay, no trade again
    assert _traded(_knee_context([undone(False), _carried(0.1, 1200, plan_id=3)])).is_empty


def test_a_knee_trade_waits_for_the_verdict_on_the_last_change_of_ps_or_workers():
    # 599 s after a plan that set the PS (judge_after_s 600) a trade on a cost seen
    # before it would hide whether that change paid. Nor does it trade on the window's
    # 0.1995 instead (2 PS of 3.6 cores): taken back, such a trade is never made again,
    # and the knee's trade (2 PS of 2.0, +70 %) would be lost. It waits a round.
    def estimated(seconds_ago):
        return plan(
            seconds_ago=seconds_ago,
            plan_id=2,
            roles={"ps": RoleSpec(count=1)},
            stage=Stage.estimate,
        )

    early = _traded(_knee_context([_carried(0.1, 1200), estimated(599)]))
    assert early.is_empty
    message = early.reasons[0].message
    assert "the tier ran at 0.1000 PS core-s per step, below 0.8 x today's 0.1995" in message
    assert "A trade waits for the verdict on the last change" in message
    later = _traded(_knee_context([_carried(0.1, 1200), estimated(600)]))
    assert later.roles == {"ps": RoleSpec(count=2, cpu=2.0)}
    # and so after a plan that set the workers: more workers the tier made room for
    stepped = plan(seconds_ago=599, plan_id=2, roles={"worker": RoleSpec(count=4)})
    assert _traded(_knee_context([_carried(0.1, 1200), stepped])).is_empty
    # without a knee the trade does not wait: on the window's cost at once
    assert _traded(_knee_context([estimated(599)])).roles == {"ps": RoleSpec(count=2, cpu=3.6)}


def test_a_removed_ps_counts_in_the_cost_per_step_the_tier_ran_at():
    # 11 to 8 minutes ago one trainer ran 5 steps/s beside ps-0 and ps-1 (removed since)
    # at 0.25 cores each: 0.5 / 5 = 0.1 core-s per step. Since, ps-0 alone at 4.0 cores
    # for 4 trainers at 20.0: a trade on 0.1. With no plan applied since, that rise
    # within the window reads as a load that grows per step, not a knee, so the PS are
    # not held to the 2.0 cores a knee would serve: for 4 workers they would need 2.4
    # each (20.8 cores), for 3 they get 0.1 x 30 x 0.5 / 0.85 = 1.76 -> 1.8 (30 steps/s).
    ps1 = node("j-edljob-ps-1", "ps", cpu=4, memory_mib=8192, index=1)
    points = series("j-edljob-ps-0", cpu=[0.25] * 4 + [4.0] * 8)
    points += [
        NodeSample(ps1.name, NOW - timedelta(seconds=60 * (11 - i)), 0.25, 1024.0) for i in range(4)
    ]
    points += [s for n in WORKERS for s in series(n.name, cpu=[2.0] * 8)]
    busy = (20.0, 20.0, 20.2, 19.8, 20.0, 20.1, 19.9, 20.0)
    speed = speeds([(1, 5.0)] * 4 + [(4, v) for v in busy])
    removed = _traded(_knee_context(points=points, speed=speed, gone=[ps1]))
    assert removed.roles == {"ps": RoleSpec(count=2, cpu=1.8)}
    # its role unknown, those times are left out (the tier's use then is not all known)
    unknown = _traded(_knee_context(points=points, speed=speed))
    assert unknown.roles == {"ps": RoleSpec(count=2, cpu=3.6)}


def test_a_cost_per_step_that_grows_at_one_configuration_is_no_knee():
    # Since the newest applied plan (8 minutes ago) the PS used 4.0 cores while the speed
    # went 20.0 -> 18.0 at the same 4 trainers: 4 / 20 = 0.2 core-s per step in the first
    # half, 4 / 18 = 0.2222 in the second, over 5 % more. A load that grows per step, not
    # a knee: the 0.1 it ran at 20 minutes ago is not counted on. The window's 0.2 is:
    # at 18.0 the 4 trainers' full pace is 18 / 0.5 / 4 = 9 steps/s each; 2 PS for 4
    # need 0.2 x 36 x 0.5 / 0.85 = 4.24 -> 4.3 cores each, 8.6 + 16 > 20; for 3 they need
    # 3.18 -> 3.2 each, 6.4 + 12 = 18.4: 27 steps/s, +50 %.
    applied = plan(seconds_ago=480, plan_id=2)
    growing = [(4, 20.0)] * 4 + [(4, 18.0)] * 4
    proposal = _traded(
        _knee_context([applied, _carried(0.1, 1200, plan_id=3)], speed=speeds(growing))
    )
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=3.2)}
    assert proposal.reasons[0].evidence["traded_from"]["knee"] is False
    # steady at 20.0 over the same 8 samples, the knee trade of 2.0 cores each
    steady = speeds([(4, 20.0)] * 8)
    proposal = _traded(_knee_context([applied, _carried(0.1, 1200, plan_id=3)], speed=steady))
    assert proposal.roles == {"ps": RoleSpec(count=2, cpu=2.0)}


def test_a_tier_past_its_knee_is_traded_at_trade_min_gain_beside_paced_trainers():
    # The paced trade above (2 PS at 3.6 and 3.4 of 4 cores, workers at 3.2 of 4, a
    # 27.9-core limit) asked for 30 % is not made on the window's 0.34915 core-s per
    # step. The tier ran at 0.2 ten minutes ago (below 0.8 x 0.34915): past its knee,
    # the trade needs trade_min_gain (10 %) only. 3 PS of 0.2 x 25 x 0.3524 / 0.85 = 2.07
    # -> 2.1 cores, 6.3 + 16 = 22.3 cores: 25 steps/s, +25 %.
    paced = PsScalingSettings(paced_trade_min_gain=0.3)
    points = samples(worker=3.2)
    assert propose(points, limits=Limits(cpu=27.9), settings=paced).is_empty
    proposal = propose(points, limits=Limits(cpu=27.9), settings=paced, plans=[_carried(0.2, 600)])
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=2.1)}
    assert "predicted 25.00 steps/s (+25%). PS 2 -> 3, 4 -> 2.1 cores each" in (
        proposal.reasons[0].message
    )
    assert proposal.reasons[0].threshold["trade_min_gain"] == 0.1
    # A cost per step that rose at one configuration (the speed 20.0 -> 15.0 at the same
    # PS use: 0.35 -> 0.4667 core-s per step) is a load that grows, not a knee: the
    # window's 0.35 is below 0.8 x today's 0.4667, yet the trade (3 PS of 2.8 cores,
    # predicted 18.75 steps/s, +25 %) still needs the 30 % asked beside paced trainers.
    growing = speeds([(4, 20.0)] * 4 + [(4, 15.0)] * 4)
    assert propose(
        points, limits=Limits(cpu=27.9), settings=paced, plans=[_carried(0.2, 600)], speed=growing
    ).is_empty
    assert propose(
        points,
        limits=Limits(cpu=27.9),
        settings=PsScalingSettings(paced_trade_min_gain=0.25),
        plans=[_carried(0.2, 600)],
        speed=growing,
    ).roles == {"ps": RoleSpec(count=3, cpu=2.8)}


STEADY = speeds([(4, 20.0)] * 6)


def test_a_trade_keeps_a_hot_ps_at_its_own_size_and_sizes_the_role_for_the_others():
    # ps-0, moved to 5 cores (the role's 4) and still at 100 %, ps-1 at 1.0 of 4; 4
    # workers of 4 at 2.0 (50 %) at 20.0 steps/s; the 25-core limit is full: a trade.
    # 0.3 PS core-s per step; ps-0 carries (5.0 - 1.0) / 6.0 = 66.7 % of the traffic
    # alone, so it serves 0.667 + 0.333 / 2 = 83.3 % today; full pace is 10 steps/s a
    # trainer. Over 3 PS it would serve 77.8 %, over 4 75 %, more than 1.5 x the
    # average: the role is sized for the others and ps-0 keeps its 5 cores, serving at
    # most what it serves today, 20 x 0.833 / 0.75 = 22.22 steps/s over 4 PS (21.43,
    # +7 %, over 3). The 4 workers keep their cores (the guard would fit them to the
    # role sizes, not to ps-0's own): 4 PS of 0.3 x 40 x 0.0833 / 0.85 = 1.18 -> 1.2
    # cores, 3 x 1.2 + 5 + 16 = 24.6 cores: +11 %. All at ps-0's size, 4 PS would take
    # 20 cores; on the tier's cost alone ps-0, maybe past its knee, would be counted on
    # for 40 steps/s.
    nodes, points = moved_ps(5, (5.0, 1.0), 2.0)

    def trade(limit):
        return propose(points, speed=STEADY, nodes=nodes, limits=Limits(cpu=limit))

    proposal = trade(25)
    assert proposal.roles == {"ps": RoleSpec(count=4, cpu=1.2)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=5, memory_mib=8192)]
    assert proposal.reasons[0].message.endswith(
        "j-edljob-ps-0, the busiest, keeps its 5 cores, as busy as today over 75% of the "
        "traffic instead of 83%: at most 22.22 steps/s): predicted 22.22 steps/s (+11%). "
        "PS 2 -> 4, 4 -> 1.2 cores each, j-edljob-ps-0 5"
    )
    evidence = proposal.reasons[0].evidence
    assert evidence["hot_share"] == 0.667
    assert evidence["hot_ps"] == {"node": "j-edljob-ps-0", "cpu": 5}
    # Under 24.5 cores the 4 PS would need a worker fewer: no trade
    assert trade(24.5).is_empty
    # Not moved yet (at the role's 4 cores), a hot PS is hot_ps's to move first: no trade
    # sized apart (and all at its size, none fits)
    at_role = propose(
        samples(ps=(4.0, 2.4)), speed=STEADY, limits=Limits(cpu=24), nodes=PS + WORKERS
    )
    assert at_role.is_empty


def test_a_hot_ps_past_its_knee_goes_back_to_its_cores_before_the_move_in_a_trade():
    # The trade above, but hot_ps's move of ps-0 from 4 to 5 cores (plan 7) bought
    # nothing: 3.9 cores at 20.0 steps/s before it (0.195 core-s per step), 5.0 at 20.0
    # after (0.25, x1.28, more than 1 / 0.8): past its knee. Kept apart, ps-0 goes back to
    # its 4 cores, where it served 20.0 steps/s over 83.3 % of the traffic: over 75 % (4
    # PS) at most 20 x 0.833 / 0.75 = 22.22 steps/s, as on its 5. The 4 PS of 1.2 cores
    # then take 3 x 1.2 + 4 + 16 = 23.6 cores, not 24.6: under the 24.5-core limit, which
    # left no trade with ps-0 at 5, the trade is made.
    nodes, points = moved_ps(5, (5.0, 1.0), 2.0)
    move = plan(
        seconds_ago=900,
        plan_id=7,
        migrate=(NodeChange("ps", "j-edljob-ps-0", cpu=5),),
        reasons=(
            Reason(
                "hot_ps",
                "j-edljob-ps-0 used >= 80% of its 4 cores: migrate to 5 cores",
                {
                    "node": "j-edljob-ps-0",
                    "cpu": 4,
                    "ps_cpu_per_step": 0.195,
                    "steps_per_sec": 20.0,
                    "new_cpu": 5,
                },
            ),
        ),
    )
    proposal = propose(points, speed=STEADY, nodes=nodes, limits=Limits(cpu=24.5), plans=[move])
    assert proposal.roles == {"ps": RoleSpec(count=4, cpu=1.2)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=4, memory_mib=8192)]
    assert proposal.reasons[0].message.endswith(
        "j-edljob-ps-0, the busiest, is past its knee (its CPU per step grew x1.28 after "
        "plan 7 moved it from 4 cores): back to 4 cores, where it served 20.00 steps/s over "
        "83% of the traffic, over 75%: at most 22.22 steps/s): predicted 22.22 steps/s "
        "(+11%). PS 2 -> 4, 4 -> 1.2 cores each, j-edljob-ps-0 4"
    )
    # A move that paid (4.5 cores at 20.0 before: 0.225 core-s per step, x1.11 today) is
    # not a knee: ps-0 keeps its 5, and under 24.5 cores no trade fits
    paid = replace(
        move,
        reasons=(
            replace(
                move.reasons[0], evidence=move.reasons[0].evidence | {"ps_cpu_per_step": 0.225}
            ),
        ),
    )
    assert propose(
        points, speed=STEADY, nodes=nodes, limits=Limits(cpu=24.5), plans=[paid]
    ).is_empty


def test_a_hot_ps_past_its_knee_is_read_from_the_others_use():
    # ps-0 at 4.0 of 4, ps-1 at 1.6; 0.28 PS core-s per step today, but the tier ran at
    # 0.2 ten minutes ago (a knee). ps-0's use says it carries (4.0 - 1.6) / 5.6 = 43 %
    # of the traffic alone; the traffic at 0.2 is 4.0 cores, of which ps-1 serves 1.6:
    # its even part is 40 %, so ps-0 carries 1 - 2 x 0.4 = 20 % alone and serves 60 %
    # today, like 0.2 x 20 x 0.6 = 2.4 cores at the knee's cost: no PS of the trade gets
    # more. 3 PS: ps-0 serves 0.2 + 0.8 / 3 = 46.7 %, 1.4 x the average: one size, for
    # the 4 workers 0.2 x 40 x 0.4667 / 0.85 = 4.39 -> 2.4 cores (23.2 cores), 2.4 x
    # 0.85 / (0.2 x 0.4667) = 21.86 steps/s (+9 %, made at a trade_min_gain of 5 %). On
    # the 43 % the 3 PS would be sized apart and ps-0, at most its 4 cores, would serve
    # 27.46.
    settings = PsScalingSettings(trade_min_gain=0.05)

    def knee_trade(ps_use):
        return propose(
            samples(ps=ps_use),
            speed=STEADY,
            limits=Limits(cpu=24),
            settings=settings,
            plans=[_carried(0.2, 600)],
        )

    knee = knee_trade((4.0, 1.6))
    assert knee.roles == {"ps": RoleSpec(count=3, cpu=2.4)}
    assert knee.migrate == []
    assert knee.reasons[0].evidence["hot_share"] == 0.2
    assert "predicted 21.86 steps/s (+9%)" in knee.reasons[0].message
    # at the default 10 % it is not made
    assert (
        propose(
            samples(ps=(4.0, 1.6)), speed=STEADY, limits=Limits(cpu=24), plans=[_carried(0.2, 600)]
        ).roles
        == {}
    )
    # Where the others use more than their even part of the traffic at the least cost
    # (ps-1 at 2.4 of 4.0 x 0.5), they are past the knee too and tell nothing: ps-0's
    # part is read from the use, (4.0 - 2.4) / 6.4 = 25 %.
    both = knee_trade((4.0, 2.4))
    assert both.reasons[0].evidence["hot_share"] == 0.25


def test_a_hot_ps_moved_above_the_role_keeps_its_own_cores_when_more_ps_come():
    # ps-0, moved to 6 cores (the role's 4), uses 4.5 (75 %: below saturation), ps-1 1.0
    # of 4; the trainers at 25 % wait: 8 PS, x 2.286, as above. ps-0 carries (4.5 - 1.0)
    # / 5.5 = 63.6 % of the load alone, 0.636 + 0.364 / 8 = 68.2 % over 8 PS: the role
    # is sized for the others, 5.5 x 0.364 / 8 x 2.286 / 0.6 = 0.95 -> 1.0 core, and
    # ps-0 keeps its 6 of today, not the role's 4 (its use may be a knee's: no share of
    # the tier's use says what it needs)
    nodes, points = moved_ps(6, (4.5, 1.0), 1.0)
    proposal = propose(points, nodes=nodes)
    assert proposal.roles == {"ps": RoleSpec(count=8, cpu=1.0)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=6, memory_mib=8192)]


def test_a_trade_taken_back_keeps_a_ps_above_the_role_at_its_own_size():
    # A trade from 2 PS of 4 cores to 3 of 2, ps-0 kept at its 6 (moved there before),
    # did not pay (20.0 -> 20.1 steps/s): back to 2 PS of 4 cores, and ps-0, which the
    # role's new size would relaunch at 4, keeps its 6. So does it when it has failed
    # (it comes back at the role's size too). Back to 1.5 cores from a trade to 2, ps-1
    # and ps-2 (at the role's 2, above 1.5) go back with the role; ps-0 keeps its 6.
    ps = [
        node("j-edljob-ps-0", "ps", cpu=6, memory_mib=8192, index=0),
        *(node(f"j-edljob-ps-{i}", "ps", cpu=2, memory_mib=8192, index=i) for i in (1, 2)),
    ]
    three = WORKERS[:3]
    roles = {
        "ps": RoleSpec(count=3, cpu=2, memory_mib=8192),
        "worker": RoleSpec(count=3, cpu=4, memory_mib=8192),
    }

    def take_back(live, failed, before_cpu=4):
        points = [s for n in live for s in series(n.name, cpu=[1.5] * 8)]
        points += [s for n in three for s in series(n.name, cpu=[3.0] * 8)]
        ctx = context(
            Stage.running,
            job(roles=roles, namespace="ml", limits=Limits(cpu=30)),
            nodes=live + three,
            failed_nodes=failed,
            samples=points,
            speed=speeds([(4, 20.0)] * 10 + [(3, 20.1)] * 10),
            plans=[CREATED, applied_trade(2, before_cpu, 3, 2)],
        )
        return PsScalingOptimizer().propose(ctx, SETTINGS)

    kept = [NodeChange("ps", "j-edljob-ps-0", cpu=6, memory_mib=8192)]
    running = take_back(ps, [])
    assert running.roles == {"ps": RoleSpec(count=2, cpu=4)}
    assert running.migrate == kept
    assert "it did not help, back to 2 PS of 4 cores" in running.reasons[0].message
    failed = take_back(ps[1:], [replace(ps[0], status="failed")])
    assert failed.roles == {"ps": RoleSpec(count=2, cpu=4)}
    assert failed.migrate == kept
    smaller = take_back(ps, [], before_cpu=1.5)
    assert smaller.roles == {"ps": RoleSpec(count=2, cpu=1.5)}
    assert smaller.migrate == kept


def test_a_hot_ps_moved_already_keeps_its_cores_beside_more_ps_for_busy_looking_trainers():
    # ps-0, moved to 8 cores (the role's 4), uses 7.8 (97 %), hot beside ps-1 at 2.0 of
    # 4; the trainers at 3.0 of 4 (75 %) keep their pace, so no trade is made, and
    # hot_ps moved ps-0 once already (its cores past a knee buy little). The job ran
    # 10.0 steps/s at 1 PS and 20.0 at 2: every fitted curve has more PS shorten the
    # exchange (at least +22.7 % at 3 PS, as above). ps-0 carries (7.8 - 2.0) / 9.8 =
    # 59.2 % of the load alone, which stays on it: its share falls from 0.592 + 0.408 / 2
    # = 0.796 at 2 PS to 0.728 at 3, 0.694 at 4, 0.673 at 5, 0.660 at 6, 0.650 at 7, so
    # the speed can grow at most x 1.0935, 1.147, 1.182, 1.206, 1.224: each further PS
    # gains 4.9 %, 3.0 %, 2.1 %, then 1.5 % (below network_step_gain 2 %): 6 PS wanted.
    # ps-0 keeps its 8 cores; the others split today's other 4: 0.8 each over 5 would
    # carry 2.0 x (1 - 0.660) / (1 - 0.796) x 1.206 / 5 = 0.80 cores (over 85 % of 0.8),
    # 1.0 over 4 0.95, 1.3 over 3 1.15, 2.0 over 2 1.46 (73 %): 3 PS of 2.0, +9 %.
    plans, speed = _ps_count_changed(1, 2, 10.0, 20.0, cpu_before=8)
    nodes, points = moved_ps(8, (7.8, 2.0), 3.0)
    proposal = propose(points, speed=speed, plans=plans, nodes=nodes)
    assert proposal.roles == {"ps": RoleSpec(count=3, cpu=2.0)}
    assert proposal.migrate == [NodeChange("ps", "j-edljob-ps-0", cpu=8, memory_mib=8192)]
    assert proposal.reasons[0].evidence["predicted_speed_gain"] == 0.0935
    # ps-1 at 0.5: ps-0 carries 7.3 / 8.3 = 88.0 % alone, its share 0.940 at 2 PS and
    # 0.920 at 3: +2.2 %, and a fourth gains 1.1 % more (below 2 %). More PS would not pay.
    nodes, points = moved_ps(8, (7.8, 0.5), 3.0)
    little = propose(points, speed=speed, plans=plans, nodes=nodes)
    assert little.is_empty
    assert (
        "j-edljob-ps-0, moved already, keeps its 88% of the traffic beyond an even share "
        "however many PS: 3 PS would gain +2.2%, less than 5%, and each further one less "
        "than 2%"
    ) in little.reasons[0].message
    # Not yet moved (at the role's 4 cores, 3.9 used beside 1.0): hot_ps moves it first.
    nodes, points = moved_ps(4, (3.9, 1.0), 3.0)
    first = propose(points, speed=speed, plans=plans, nodes=nodes)
    assert first.is_empty
    assert "hot relative to the other PS: moving it (hot_ps) helps first" in (
        first.reasons[0].message
    )
