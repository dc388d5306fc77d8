from brain.domain import Limits, PlanStatus, RoleBounds, RoleSpec, Stage
from brain.optimizing import Reason
from optimizers.worker_tuning import WorkerTuningOptimizer, WorkerTuningSettings
from tests.builders.views import context, job, node, plan, series, speeds

SETTINGS = WorkerTuningSettings()  # PS < 80 %, +2 workers, gain >= 5 %, 3 speed samples, 600 s
PS = node("ps-0", "ps", cpu=8, memory_mib=8192)
COOL_PS = series("ps-0", cpu=[4, 4, 4])  # 50 % of 8 cores


def tuning_context(workers, speed, plans=(), ps_samples=COOL_PS, limits=None, bounds=None):
    roles = {
        "chief": RoleSpec(count=1, cpu=4, memory_mib=8192),
        "worker": RoleSpec(count=workers, cpu=4, memory_mib=8192),
        "ps": RoleSpec(count=1, cpu=8, memory_mib=8192),
    }
    the_job = job(roles=roles, limits=limits or Limits(cpu=100), bounds=bounds)
    return context(Stage.running, the_job, nodes=[PS], samples=ps_samples, speed=speed, plans=plans)


def changed_workers(to, seconds_ago, status=PlanStatus.applied, plan_id=1):
    return plan(
        status=status,
        seconds_ago=seconds_ago,
        roles={"worker": RoleSpec(count=to)},
        plan_id=plan_id,
    )


def propose(ctx, settings=SETTINGS):
    return WorkerTuningOptimizer().propose(ctx, settings)


def test_adds_workers_while_speed_improves_then_stops():
    # 1) PS at 50 %, no earlier count to compare with: 2 -> 4 workers
    first = propose(tuning_context(2, speeds([(3, 10.0)] * 3)))
    assert first.roles == {"worker": RoleSpec(count=4)}

    # 2) 700 s after that plan, speed went 10 -> 14 steps/s (+40 % >= 5 %): 4 -> 6
    speed = speeds([(3, 10.0)] * 3 + [(5, 14.0)] * 3)
    second = propose(tuning_context(4, speed, plans=[changed_workers(4, 700)]))
    assert second.roles == {"worker": RoleSpec(count=6)}
    assert second.reasons[0].evidence["speed_gain"] == (14 - 10) / 10

    # 3) speed went 14 -> 14.3 (+2.1 % < 5 %): the 2 added workers did not pay, 6 -> 4
    #    (they used to stay, and be added again once the old samples left the window)
    speed = speeds([(5, 14.0)] * 3 + [(7, 14.3)] * 3)
    third = propose(tuning_context(6, speed, plans=[changed_workers(6, 700)]))
    assert third.roles == {"worker": RoleSpec(count=4)}
    assert "did not pay" in third.reasons[0].message
    assert third.reasons[0].threshold == {"min_speed_gain": 0.05}


def test_a_count_that_did_not_pay_is_a_ceiling():
    # Applied 4 -> 6, then taken back 6 -> 4; the speed window now only holds the 4-worker
    # run (5 training with the chief), so no gain can be computed: it must not grow again.
    speed = speeds([(5, 14.0)] * 3 + [(7, 14.3)] * 3)
    take_back = propose(tuning_context(6, speed, plans=[changed_workers(6, 700)]))
    taken_back = plan(
        seconds_ago=700, roles=take_back.roles, reasons=tuple(take_back.reasons), plan_id=2
    )
    plans = [changed_workers(6, 2000, plan_id=1), taken_back]
    proposal = propose(tuning_context(4, speeds([(5, 14.0)] * 3), plans=plans))
    assert proposal.is_empty
    assert "more than 4 workers did not pay" in proposal.reasons[0].message


def test_a_decrease_that_was_no_take_back_is_no_ceiling():
    # 6 -> 4 by the guard (fitting the limits for an added PS): growth may be tried again
    plans = [changed_workers(6, 2000, plan_id=1), changed_workers(4, 700, plan_id=2)]
    proposal = propose(tuning_context(4, speeds([(5, 14.0)] * 3), plans=plans))
    assert proposal.roles == {"worker": RoleSpec(count=6)}


def test_cooldown_after_an_applied_worker_change():
    speed = speeds([(3, 10.0)] * 3 + [(5, 14.0)] * 3)
    cooling = propose(tuning_context(4, speed, plans=[changed_workers(4, 300)]))
    # 300 s < 600 s cooldown
    assert cooling.is_empty
    assert "cooling down" in cooling.reasons[0].message
    # a rejected plan does not start a cooldown
    rejected = propose(
        tuning_context(4, speed, plans=[changed_workers(4, 300, PlanStatus.rejected)])
    )
    assert rejected.roles["worker"].count == 6


def test_busy_ps_stops_adding():
    busy = series("ps-0", cpu=[7, 7, 7])  # 87.5 % >= 80 %
    proposal = propose(tuning_context(2, speeds([(3, 10.0)] * 3), ps_samples=busy))
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["ps_cpu_utilization"] == 0.875


def test_limits_bound_the_step():
    speed = speeds([(3, 10.0)] * 3)
    # now: chief 4 + 2 workers x 4 + PS 8 = 20 cores; +1 worker = 24 fits, +2 = 28 does not
    assert propose(tuning_context(2, speed, limits=Limits(cpu=24))).roles["worker"].count == 3
    assert propose(tuning_context(2, speed, limits=Limits(cpu=22))).is_empty


def test_waits_for_enough_speed_samples():
    proposal = propose(tuning_context(2, speeds([(3, 10.0)] * 2)))
    assert proposal.is_empty
    assert proposal.reasons[0].evidence == {"speed_samples": 2}


def test_the_gain_is_judged_per_added_worker():
    # 4 -> 6 workers (5 -> 7 training), 14.0 -> 15.0 steps/s: +7.1 % in all, 3.6 % per
    # added worker < 5 %: the two workers did not pay for themselves and go again
    speed = speeds([(5, 14.0)] * 3 + [(7, 15.0)] * 3)
    proposal = propose(tuning_context(6, speed, plans=[changed_workers(6, 700)]))
    assert proposal.roles == {"worker": RoleSpec(count=4)}
    evidence = proposal.reasons[0].evidence
    assert evidence["speed_gain"] == (15 - 14) / 14
    assert evidence["speed_gain_per_worker"] == (15 - 14) / 14 / 2
    assert "3.6% per added worker, below 5%" in proposal.reasons[0].message


def test_a_take_back_stops_at_min_count():
    speed = speeds([(5, 14.0)] * 3 + [(7, 15.0)] * 3)
    bounds = {"worker": RoleBounds(min_count=5)}
    ctx = tuning_context(6, speed, plans=[changed_workers(6, 700)], bounds=bounds)
    assert propose(ctx).roles == {"worker": RoleSpec(count=5)}
    bounds = {"worker": RoleBounds(min_count=6)}
    ctx = tuning_context(6, speed, plans=[changed_workers(6, 700)], bounds=bounds)
    kept = propose(ctx)
    assert kept.is_empty
    assert "min_count 6 keeps them" in kept.reasons[0].message


def test_growth_stops_at_max_count():
    speed = speeds([(3, 10.0)] * 3)
    # 2 workers, step 2, max_count 3: one more
    grown = propose(tuning_context(2, speed, bounds={"worker": RoleBounds(max_count=3)}))
    assert grown.roles == {"worker": RoleSpec(count=3)}
    at_max = propose(tuning_context(2, speed, bounds={"worker": RoleBounds(max_count=2)}))
    assert at_max.is_empty
    assert at_max.reasons[0].threshold == {"max_count": 2}


def sized_context(
    worker_cpu_used, limit_cpu, workers=2, worker_cpu=9.0, plans=(), speed=None, ps_cpu=4
):
    """A PS (its role 4 cores, its node ``ps_cpu``) at 2 cores, ``workers`` workers of
    ``worker_cpu`` cores using ``worker_cpu_used`` each, no chief."""
    roles = {
        "worker": RoleSpec(count=workers, cpu=worker_cpu, memory_mib=8192),
        "ps": RoleSpec(count=1, cpu=4, memory_mib=8192),
    }
    nodes = [node("ps-0", "ps", cpu=ps_cpu, memory_mib=8192)] + [
        node(f"worker-{i}", "worker", cpu=worker_cpu, memory_mib=8192, index=i)
        for i in range(workers)
    ]
    samples = series("ps-0", cpu=[2, 2, 2]) + [
        s for i in range(workers) for s in series(f"worker-{i}", cpu=[worker_cpu_used] * 3)
    ]
    the_job = job(roles=roles, limits=Limits(cpu=limit_cpu))
    speed = speed or speeds([(workers, 20.0)] * 3)
    return context(Stage.running, the_job, nodes=nodes, samples=samples, speed=speed, plans=plans)


def test_one_more_worker_fits_when_every_worker_gets_a_little_less():
    # 4 + 3 x 9 = 31 > 30 cores; (30 - 4) / 3 = 8.67 -> 8.6 cores each, more than the 7.5
    # they use: 3 x 7.5 / (2 x 7.5) = +50 % CPU in use >= 5 %
    proposal = propose(sized_context(7.5, 30))
    assert proposal.roles == {"worker": RoleSpec(count=3, cpu=8.6)}
    evidence = proposal.reasons[0].evidence
    assert (evidence["worker_cpu_before"], evidence["worker_cpu_used"]) == (9.0, 7.5)
    assert "+50% CPU in use" in proposal.reasons[0].message


def test_a_ps_migrated_to_more_cpu_counts_at_its_own_size():
    # the PS node runs 6 cores (its role says 4): (30 - 6) / 3 = 8.0 cores each
    proposal = propose(sized_context(7.5, 30, ps_cpu=6))
    assert proposal.roles == {"worker": RoleSpec(count=3, cpu=8.0)}


def test_no_smaller_workers_when_that_adds_too_little():
    # CPU-bound workers (8 of 8 cores): (29 - 4) / 4 = 6.25 -> 6.2 cores each,
    # 4 x 6.2 / (3 x 8) = +3.3 % < 5 %; under 30 cores: 6.5 each, +8.3 %
    used_up = dict(workers=3, worker_cpu=8.0)
    assert propose(sized_context(8.0, 29, **used_up)).is_empty
    assert propose(sized_context(8.0, 30, **used_up)).roles == {
        "worker": RoleSpec(count=4, cpu=6.5)
    }


def test_smaller_workers_that_did_not_pay_are_taken_back_with_their_size():
    added = Reason("worker_tuning", "3 workers of 8.6", {"added": 1, "worker_cpu_before": 9.0})
    shrunk = plan(seconds_ago=700, roles={"worker": RoleSpec(count=3, cpu=8.6)}, reasons=(added,))
    # 20.0 -> 20.2 steps/s: +1 % for 1 added worker < 5 %
    speed = speeds([(2, 20.0)] * 3 + [(3, 20.2)] * 3)
    ctx = sized_context(7.5, 30, workers=3, worker_cpu=8.6, plans=[shrunk], speed=speed)
    proposal = propose(ctx)
    assert proposal.roles == {"worker": RoleSpec(count=2, cpu=9.0)}
    assert "back to 9 cores each" in proposal.reasons[0].message


def estimated(workers_planned, workers_applied):
    """An estimate planned ``workers_planned`` trainers (chief included) and the guard's
    step bound let ``workers_applied`` workers through."""
    return plan(
        seconds_ago=1200,
        stage=Stage.estimate,
        roles={"chief": RoleSpec(count=1), "worker": RoleSpec(count=workers_applied)},
        reasons=(
            Reason("estimate", "17 workers (chief included)", {"workers": workers_planned}),
            Reason(
                "guard",
                "worker: one plan changes a count or size at most 8x: count 1 -> 16 cut to 8",
            ),
        ),
    )


def test_the_rest_of_the_way_to_the_estimate_after_the_step_bound():
    # 17 trainers planned, the chief among them: 16 workers; 7 got through
    proposal = propose(tuning_context(7, speeds([(8, 10.0)] * 3), plans=[estimated(17, 7)]))
    assert proposal.roles == {"worker": RoleSpec(count=16)}
    assert proposal.reasons[0].evidence["resumes_estimate"] == 16
    # within a 70-core limit: 4 (chief) + 8 (PS) + 4 n <= 70 -> 14 workers
    limited = tuning_context(
        7, speeds([(8, 10.0)] * 3), plans=[estimated(17, 7)], limits=Limits(cpu=70)
    )
    assert propose(limited).roles == {"worker": RoleSpec(count=14)}


def test_the_estimates_count_is_not_taken_back_for_a_small_gain_per_worker():
    resumed = plan(
        seconds_ago=700,
        roles={"worker": RoleSpec(count=16)},
        reasons=(Reason("worker_tuning", "", {"added": 9, "resumes_estimate": 16}),),
        plan_id=2,
    )
    # 10 -> 10.3 steps/s for 9 more workers: 0.3 % each, but the estimate's count stays
    # and growth goes on (PS at 50 %): 16 -> 18
    speed = speeds([(8, 10.0)] * 3 + [(17, 10.3)] * 3)
    proposal = propose(tuning_context(16, speed, plans=[estimated(17, 7), resumed]))
    assert proposal.roles == {"worker": RoleSpec(count=18)}


def test_the_estimate_no_longer_speaks_once_something_else_set_the_count():
    # after the estimate, a take-back (or the guard, or a short cluster) set 7 workers:
    # growth is worker_tuning's own again, 2 at a time
    other = changed_workers(7, seconds_ago=700, plan_id=2)
    proposal = propose(tuning_context(7, speeds([(8, 10.0)] * 3), plans=[estimated(17, 7), other]))
    assert proposal.roles == {"worker": RoleSpec(count=9)}
    assert "resumes_estimate" not in proposal.reasons[0].evidence
