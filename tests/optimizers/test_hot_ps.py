from brain.domain import Limits, Resources, RoleSpec, Stage
from brain.optimizing import NodeChange
from optimizers.hot_ps import HotPsOptimizer, HotPsSettings
from tests.builders.views import context, job, node, plan, series, speeds

# hot at >= 80 % in each of the last 3 samples and 1.5 x the others' median, sized for 60 %
SETTINGS = HotPsSettings(hot_samples=3)
PS = [node(f"ps-{i}", "ps", cpu=8, memory_mib=16384) for i in range(3)]
SAMPLES = [
    # hot: the last three are 7.0, 7.2, 7.6 of 8 cores = 87.5 %, 90 %, 95 %
    *series("ps-0", cpu=[2.0, 7.0, 7.2, 7.6]),
    # one dip to 3.0 (37.5 %) in the last three: not hot
    *series("ps-1", cpu=[7.0, 3.0, 7.5]),
    *series("ps-2", cpu=[2.0, 2.0, 2.0]),
]


def test_hot_ps_among_cold_ones_is_migrated():
    proposal = HotPsOptimizer().propose(context(Stage.running, nodes=PS, samples=SAMPLES), SETTINGS)
    # peak 7.6 / 0.6 = 12.67 -> 12.7 cores; memory unchanged
    assert proposal.migrate == [NodeChange(role="ps", name="ps-0", cpu=12.7, memory_mib=16384)]
    assert proposal.reasons[0].evidence["cpu_used"] == [7.0, 7.2, 7.6]
    assert proposal.reasons[0].threshold["hot_threshold"] == 0.8


def test_hot_ps_capped_at_node_max():
    ctx = context(
        Stage.running, nodes=PS, samples=SAMPLES, node_max=Resources(cpu=10, memory_mib=65536)
    )
    proposal = HotPsOptimizer().propose(ctx, SETTINGS)
    assert [(c.name, c.cpu) for c in proposal.migrate] == [("ps-0", 10)]


def test_hot_ps_already_on_largest_node_is_reported_not_migrated():
    ctx = context(
        Stage.running, nodes=PS, samples=SAMPLES, node_max=Resources(cpu=8, memory_mib=65536)
    )
    proposal = HotPsOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty
    assert "cannot grow" in proposal.reasons[0].message


def test_no_hot_ps_is_an_empty_proposal():
    proposal = HotPsOptimizer().propose(
        context(Stage.running, nodes=PS[1:], samples=SAMPLES[4:]), SETTINGS
    )
    assert proposal.is_empty
    # ps-1: (7.0 + 3.0 + 7.5) / 3 / 8 cores
    assert proposal.reasons[0].evidence["utilization"]["ps-1"] == 0.729


def test_three_hot_samples_are_not_enough_by_default():
    # The default needs 8 samples (2 minutes at a 15 s scrape); 45 s of load is not a trend.
    proposal = HotPsOptimizer().propose(
        context(Stage.running, nodes=PS, samples=SAMPLES), HotPsSettings()
    )
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["ps_without_enough_samples"] == ["ps-0", "ps-1", "ps-2"]


def test_all_ps_equally_busy_are_not_migrated():
    busy = [s for i in range(3) for s in series(f"ps-{i}", cpu=[7.0, 7.2, 7.6])]
    proposal = HotPsOptimizer().propose(context(Stage.running, nodes=PS, samples=busy), SETTINGS)
    # Each at 90 % with the others' median at 90 % < 1.5 x: migrating all would not help.
    assert proposal.migrate == []
    assert all("more PS would help" in r.message for r in proposal.reasons)


def test_no_migration_within_the_ps_tier_cooldown():
    # any applied change of the PS tier counts: here a migration of the other hot PS
    moved = plan(seconds_ago=250, migrate=(NodeChange(role="ps", name="ps-1", cpu=8),))
    ctx = context(Stage.running, nodes=PS, samples=SAMPLES, plans=[moved])
    proposal = HotPsOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate == []
    assert "at most one PS change per 300 s" in proposal.reasons[0].message
    assert proposal.reasons[0].evidence == {"seconds_since_ps_change": 250.0, "plan": 1}
    later = plan(seconds_ago=301, migrate=(NodeChange(role="ps", name="ps-1", cpu=8),))
    ctx = context(Stage.running, nodes=PS, samples=SAMPLES, plans=[later])
    assert HotPsOptimizer().propose(ctx, SETTINGS).migrate
    # an OOM fix is not an elective change: it starts no interval
    fix = plan(seconds_ago=60, source_event_id=7, migrate=(NodeChange(role="ps", name="ps-1"),))
    ctx = context(Stage.running, nodes=PS, samples=SAMPLES, plans=[fix])
    assert HotPsOptimizer().propose(ctx, SETTINGS).migrate


def test_a_hot_ps_the_trainers_wait_on_is_sized_for_their_full_pace():
    # ps-0 peaks at 7.6 of 8 cores; two workers of 4 cores use w of them over its samples
    def migrated(worker_cpu_used):
        workers = [node(f"w-{i}", "worker", cpu=4, memory_mib=8192) for i in range(2)]
        samples = SAMPLES + [s for w in workers for s in series(w.name, cpu=[worker_cpu_used] * 3)]
        ctx = context(Stage.running, nodes=PS + workers, samples=samples)
        return HotPsOptimizer().propose(ctx, SETTINGS)

    # at 2.0 of 4 (50 % <= 70 %) they wait: 7.6 / 0.5 = 15.2 at full pace, / 0.6 = 25.33
    # -> 25.4 cores
    proposal = migrated(2.0)
    assert [(c.name, c.cpu) for c in proposal.migrate] == [("ps-0", 25.4)]
    assert proposal.reasons[0].evidence["cpu_demand"] == 15.2
    assert "the trainers use 50% of their CPU, waiting on it" in proposal.reasons[0].message
    # at 0.4 of 4 (10 %): x 10 capped at max_growth 4: 30.4 / 0.6 = 50.67 -> 50.7
    assert [(c.name, c.cpu) for c in migrated(0.4).migrate] == [("ps-0", 50.7)]
    # at 3.2 of 4 (80 %) they keep their pace: peak / 0.6 = 12.7 as before
    assert [(c.name, c.cpu) for c in migrated(3.2).migrate] == [("ps-0", 12.7)]


def test_a_moved_ps_no_longer_hot_gives_its_cpu_back():
    # The role runs PS of 4 cores; ps-0 was moved to 12. At a peak of 3.0 it needs
    # 3.0 / 0.6 = 5 cores (60 % busy at its peak, under 85 %), at most 0.75 x 12 = 9:
    # back to 5. ps-1 at the role's size is left alone
    def give_back(ps0_used, plans=()):
        nodes = [
            node("ps-0", "ps", cpu=12, memory_mib=16384, index=0),
            node("ps-1", "ps", cpu=4, memory_mib=16384, index=1),
        ]
        samples = series("ps-0", cpu=ps0_used) + series("ps-1", cpu=[1.0, 1.0, 1.0])
        the_job = job(roles={"ps": RoleSpec(count=2, cpu=4, memory_mib=16384)})
        ctx = context(Stage.running, the_job, nodes=nodes, samples=samples, plans=plans)
        return HotPsOptimizer().propose(ctx, SETTINGS)

    proposal = give_back([2.8, 3.0, 2.9])
    assert proposal.migrate == [NodeChange(role="ps", name="ps-0", cpu=5, memory_mib=16384)]
    assert "no longer hot" in proposal.reasons[0].message
    # at a peak of 0.5 it goes back to the role's 4 cores
    assert [(c.name, c.cpu) for c in give_back([0.4, 0.5, 0.5]).migrate] == [("ps-0", 4)]
    # at a peak of 5.6 (9.4 cores) it keeps its 12
    assert give_back([5.0, 5.6, 5.2]).is_empty
    # not within the PS tier's cooldown
    moved = plan(seconds_ago=100, migrate=(NodeChange(role="ps", name="ps-0", cpu=12),))
    assert give_back([2.8, 3.0, 2.9], plans=[moved]).is_empty


def test_a_moved_ps_keeps_its_cpu_while_the_speed_stalls():
    # ps-0, moved to 12 cores, peaks at 3.0 while the job trains at 0 steps/s (a
    # checkpoint): its use says nothing of its need once training resumes
    nodes = [
        node("ps-0", "ps", cpu=12, memory_mib=16384, index=0),
        node("ps-1", "ps", cpu=4, memory_mib=16384, index=1),
    ]
    samples = series("ps-0", cpu=[2.8, 3.0, 2.9]) + series("ps-1", cpu=[1.0, 1.0, 1.0])
    the_job = job(roles={"ps": RoleSpec(count=2, cpu=4, memory_mib=16384)})

    def propose(speed):
        ctx = context(Stage.running, the_job, nodes=nodes, samples=samples, speed=speed)
        return HotPsOptimizer().propose(ctx, SETTINGS)

    assert propose(speeds([(4, 0.0), (4, 0.0), (4, 0.0)])).is_empty
    assert [(c.name, c.cpu) for c in propose(speeds([(4, 20.0)] * 3)).migrate] == [("ps-0", 5)]


def test_a_hot_ps_without_room_under_the_limit_takes_cores_from_the_idle_others():
    # 3 PS of 8 cores (24) under a 26-core limit: 2 cores of room. ps-0 is pinned at its
    # request (mean 7.8 of 8, 97.5 % >= 95 %) and wants 7.9 / 0.6 = 13.2 cores. The others
    # peak at 2.4 and 2.0. At g x the hot PS's cores the speed grows up to g x, and each
    # other PS needs its peak x g / 0.85: g at most (2 + 16 + 8) / (8 + 4.4 / 0.85) =
    # 1.97, 13.2 / 8 = 1.65 and 8 x 0.85 / 2.4 = 2.83, so 1.65: ps-1 2.4 x 1.65 / 0.85 =
    # 4.66 -> 4.7, ps-2 3.88 -> 3.9; they free 7.4 cores, with the room 9.4 >= 5.2: ps-0
    # gets the 13.2 it wants.
    roles = {"ps": RoleSpec(count=3, cpu=8, memory_mib=16384)}
    pinned = series("ps-0", cpu=[7.7, 7.8, 7.9])
    idle = [*series("ps-1", cpu=[2.0, 2.4, 2.2]), *series("ps-2", cpu=[2.0, 2.0, 2.0])]

    def propose(limit_cpu, hot=pinned, settings=SETTINGS):
        the_job = job(roles=roles, limits=Limits(cpu=limit_cpu))
        ctx = context(Stage.running, the_job, nodes=PS, samples=[*hot, *idle])
        return HotPsOptimizer().propose(ctx, settings)

    proposal = propose(26)
    assert [(c.name, c.cpu, c.memory_mib) for c in proposal.migrate] == [
        ("ps-0", 13.2, 16384),
        ("ps-1", 4.7, 16384),
        ("ps-2", 3.9, 16384),
    ]
    why = proposal.reasons[0]
    assert "ps-0 8 -> 13.2 cores" in why.message
    assert why.evidence["cpu_room"] == 2.0
    assert why.evidence["other_ps_cpu"] == {"ps-1": 4.7, "ps-2": 3.9}
    # Room for the 5.2 cores: the plain migration, the others untouched
    assert [(c.name, c.cpu) for c in propose(30).migrate] == [("ps-0", 13.2)]
    # Hot but not pinned (7.0, 7.2, 7.6: 90.8 %): it does not hold the speed, so the
    # others keep their cores; the plain migration to 7.6 / 0.6 = 12.7, which the guard
    # fits to the limit as before
    unpinned = series("ps-0", cpu=[7.0, 7.2, 7.6])
    assert [(c.name, c.cpu) for c in propose(26, hot=unpinned).migrate] == [("ps-0", 12.7)]
    # Asked for a growth of at least 70 %: 1.65 x is too little for three relaunches
    fussy = HotPsSettings(hot_samples=3, cold_min_gain=0.7)
    assert [(c.name, c.cpu) for c in propose(26, settings=fussy).migrate] == [("ps-0", 13.2)]


def test_a_pinned_ps_beside_busy_others_takes_their_spare_cores_under_a_full_limit():
    # ps-0 pinned at 97.5 %, the others at 5.6 of 8 (70 %): 0.975 < 1.5 x 0.7, so a larger
    # ps-0 alone is not hot_ps's first answer (more PS would help). But the limit (24 of
    # 24 cores) has no room for more PS, and the others have spare cores: g at most
    # 24 / (8 + 11.2 / 0.85) = 1.133 (and 8 x 0.85 / 5.6 = 1.21, 13.2 / 8 = 1.65), so
    # each other PS keeps 5.6 x 1.133 / 0.85 = 7.47 -> 7.5 cores, and ps-0 gets the 1.0
    # they free: 9.0 cores, +12.5 % >= 10 %.
    roles = {"ps": RoleSpec(count=3, cpu=8, memory_mib=16384)}
    busy = [*series("ps-1", cpu=[5.6] * 3), *series("ps-2", cpu=[5.6] * 3)]

    def propose(hot):
        the_job = job(roles=roles, limits=Limits(cpu=24))
        ctx = context(Stage.running, the_job, nodes=PS, samples=[*hot, *busy])
        return HotPsOptimizer().propose(ctx, SETTINGS)

    pinned = propose(series("ps-0", cpu=[7.7, 7.8, 7.9]))
    assert [(c.name, c.cpu) for c in pinned.migrate] == [
        ("ps-0", 9.0),
        ("ps-1", 7.5),
        ("ps-2", 7.5),
    ]
    # Not pinned (90.8 %): it does not hold the speed; more PS would help
    loose = propose(series("ps-0", cpu=[7.0, 7.2, 7.6]))
    assert loose.migrate == []
    assert "more PS would help" in loose.reasons[0].message


def test_a_move_records_the_cost_per_step_it_is_judged_by():
    # ps-0 of 8 cores at 7.0, 7.2, 7.6 (mean 7.267) while the job trains at 50.0 steps/s:
    # 0.145333 core-s per step, at 50.0 steps/s
    ctx = context(Stage.running, nodes=PS, samples=SAMPLES, speed=speeds([(4, 50.0)] * 3))
    evidence = HotPsOptimizer().propose(ctx, SETTINGS).reasons[0].evidence
    assert evidence["ps_cpu_per_step"] == 0.145333
    assert evidence["steps_per_sec"] == 50.0
