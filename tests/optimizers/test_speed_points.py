"""speed_points: which configuration each speed sample measured, and which samples none."""

from datetime import timedelta

from brain.domain import RoleSpec, Stage
from brain.optimizing import NodeChange
from brain.optimizing.speed_fit import Configuration
from brain.optimizing.speed_points import during, observe, stalled_periods, stalled_since
from tests.builders.views import NOW, context, job, node, plan, speeds

ROLES = {
    "worker": RoleSpec(count=4, cpu=2, memory_mib=4096),
    "ps": RoleSpec(count=2, cpu=4, memory_mib=8192),
}
PS = [node(f"j-edljob-ps-{i}", "ps", cpu=4, memory_mib=8192, index=i) for i in range(2)]


def observed(speed, plans=(), nodes=PS):
    ctx = context(Stage.running, job(roles=ROLES), nodes=nodes, speed=speed, plans=plans)
    return observe(ctx, settle_s=90, stall_share=0.5)


def test_each_sample_counts_for_the_sizes_the_plans_before_it_set():
    # samples every 60 s from 540 s ago to NOW; the create plan (3600 s ago) set 2 cores
    # per worker and 2 PS of 4 (8 PS cores, 2 PS); a plan 330 s ago set 3 cores per
    # worker: 4 samples before it, the one 300 s ago within 90 s of it (restarting, left
    # out), 5 after
    created = plan(stage=Stage.create, roles=ROLES)
    bigger = plan(seconds_ago=330, roles={"worker": RoleSpec(count=4, cpu=3)}, plan_id=2)
    result = observed(speeds([(4, 10.0)] * 5 + [(4, 12.0)] * 5), plans=[created, bigger])
    assert [(p.configuration, p.steps_per_sec, p.samples) for p in result.points] == [
        (Configuration(4, 2.0, 8.0, 2), 10.0, 4),
        (Configuration(4, 3.0, 8.0, 2), 12.0, 5),
    ]
    assert (result.settling, result.stalled) == (1, 0)
    assert result.before(Configuration(4, 3.0, 8.0, 2)) == Configuration(4, 2.0, 8.0, 2)


def test_stalls_are_left_out():
    # 0 steps/s (a PS down) and 4 (below half the median 12) are stalls
    result = observed(speeds([(4, 12.0)] * 4 + [(4, 0.0), (4, 4.0)] + [(4, 12.0)] * 2))
    assert [(p.steps_per_sec, p.samples) for p in result.points] == [(12.0, 6)]
    assert result.stalled == 2


def test_samples_older_than_the_first_plan_that_set_a_size_measure_nothing_known():
    # no plan before the samples set the worker CPU; one 150 s ago did: the 3 samples
    # before it ran with a size nobody knows, the one 120 s ago restarted, 2 are left
    resized = plan(seconds_ago=150, roles={"worker": RoleSpec(cpu=3)})
    result = observed(speeds([(4, 10.0)] * 6), plans=[resized])
    assert [(p.configuration, p.samples) for p in result.points] == [
        (Configuration(4, 3.0, 8.0, 2), 2)
    ]


def test_a_migrated_ps_counts_at_its_own_size():
    # hot_ps moved PS 0 to 10 cores 600 s ago: 10 + 4 = 14 PS cores since
    created = plan(stage=Stage.create, roles=ROLES)
    moved = plan(
        seconds_ago=600,
        migrate=(NodeChange(role="ps", name="j-edljob-ps-0", cpu=10, memory_mib=8192),),
        plan_id=2,
    )
    nodes = [node("j-edljob-ps-0", "ps", cpu=10, memory_mib=8192), PS[1]]
    result = observed(speeds([(4, 10.0)] * 3), plans=[created, moved], nodes=nodes)
    assert [p.configuration for p in result.points] == [Configuration(4, 2.0, 14.0, 2)]


def test_stalled_samples_since_a_time():
    # samples every 60 s, the last at NOW: 10, 10, 0, 10, 4, 10, 10; the last five (from
    # 240 s ago) have median 10: 0 and 4 (< 5) are stalls; from 60 s ago none
    ctx = context(
        Stage.running, job(roles=ROLES), speed=speeds([(4, v) for v in (10, 10, 0, 10, 4, 10, 10)])
    )
    assert stalled_since(ctx, NOW - timedelta(seconds=240), 0.5) == 2
    assert stalled_since(ctx, NOW - timedelta(seconds=60), 0.5) == 0
    assert stalled_since(ctx, NOW + timedelta(seconds=1), 0.5) == 0


def test_node_samples_taken_during_a_stall():
    # speed samples every 60 s, the last at NOW: 10, 10, 0, 10; the 0, sent 60 s ago,
    # measured the minute from 120 s to 60 s ago. Of node samples every 15 s over the
    # last 3 minutes, those after 120 s ago up to 60 s ago are the stall's
    ctx = context(Stage.running, job(roles=ROLES), speed=speeds([(4, v) for v in (10, 10, 0, 10)]))
    periods = stalled_periods(ctx, NOW - timedelta(seconds=180), 0.5)
    assert periods == [(NOW - timedelta(seconds=120), NOW - timedelta(seconds=60))]
    taken = [NOW - timedelta(seconds=15 * k) for k in range(12, -1, -1)]
    assert [t for t in taken if during(periods, t)] == [
        NOW - timedelta(seconds=s) for s in (105, 90, 75, 60)
    ]
    # the job's first speed sample stalled: it measured everything up to it
    first = context(Stage.running, job(roles=ROLES), speed=speeds([(4, 0.0), (4, 10.0)]))
    periods = stalled_periods(first, NOW - timedelta(seconds=600), 0.5)
    assert periods == [(None, NOW - timedelta(seconds=60))]
    assert during(periods, NOW - timedelta(seconds=3600))
    assert not during(periods, NOW - timedelta(seconds=59))
