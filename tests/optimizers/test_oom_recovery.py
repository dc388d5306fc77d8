from dataclasses import replace

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from brain.domain import PlanStatus, Resources, RoleSpec, Stage
from brain.optimizing import NodeChange
from optimizers.oom_recovery import OomRecoveryOptimizer, OomRecoverySettings
from tests.builders.views import context, node, oom, plan, series

SETTINGS = OomRecoverySettings()  # x2, at most +32768 MiB, give up after 3 OOMs
WORKER = node("worker-1", "worker", cpu=4, memory_mib=4096)


def oom_context(events, plans=(), the_node=WORKER, node_max=None):
    kwargs = {"node_max": node_max} if node_max else {}
    return context(
        Stage.oom, nodes=[the_node], node=the_node.name, events=events, plans=plans, **kwargs
    )


def test_oom_doubles_memory_and_names_the_event():
    # worker-1 held 3900 MiB before the kill at 4096: x 2 = 8192 is more than the peak
    # (3900 x 1.2 = 4680), under +32768 and the node max
    samples = series("worker-1", memory_mib=[3900.0] * 2)
    ctx = context(
        Stage.oom, nodes=[WORKER], node="worker-1", events=[oom(7, "worker-1")], samples=samples
    )
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate == [NodeChange(role="worker", name="worker-1", cpu=4, memory_mib=8192)]
    assert proposal.source_event_id == 7
    assert proposal.reasons[0].threshold["memory_factor"] == 2.0


def test_a_role_killed_before_any_sample_gets_three_times_the_killed_size():
    # The oom-storm job: 4 workers ask 4096 MiB and use 10240 from the start, each killed
    # before its first sample. The kill tells only that 4096 was too small: x 2 (8192) was
    # killed again; x 3 = 12288 holds in one fix.
    workers = [node(f"worker-{i}", "worker", cpu=4, memory_mib=4096, index=i) for i in range(4)]
    ctx = context(Stage.oom, nodes=workers, node="worker-0", events=[oom(1, "worker-0")])
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles == {"worker": RoleSpec(memory_mib=12288)}
    assert proposal.reasons[0].threshold["unseen_factor"] == 3.0
    assert "at least x3.0 of the killed size, as nothing was measured" in (
        proposal.reasons[0].message
    )


def test_replayed_oom_event_is_not_answered_twice():
    events = [oom(7, "worker-1")]
    first = OomRecoveryOptimizer().propose(oom_context(events), SETTINGS)
    answered = plan(
        stage=Stage.oom, status=PlanStatus.applied, source_event_id=first.source_event_id
    )
    second = OomRecoveryOptimizer().propose(oom_context(events, plans=[answered]), SETTINGS)
    assert second.is_empty
    assert "already answered" in second.reasons[0].message


def test_newest_unanswered_event_is_answered():
    events = [
        oom(5, "worker-1", minutes_ago=30),
        oom(9, "worker-1", minutes_ago=2),
        oom(11, "other"),
    ]
    proposal = OomRecoveryOptimizer().propose(
        oom_context(events, plans=[plan(source_event_id=5)]), SETTINGS
    )
    assert proposal.source_event_id == 9


def test_growth_capped_per_step():
    big = node("ps-0", "ps", cpu=8, memory_mib=40000)
    proposal = OomRecoveryOptimizer().propose(oom_context([oom(1, "ps-0")], the_node=big), SETTINGS)
    # 40000 x 2 = 80000, but at most +32768 -> 72768
    assert proposal.migrate[0].memory_mib == 72768


def test_growth_capped_at_node_max():
    ctx = oom_context([oom(1, "worker-1")], node_max=Resources(cpu=64, memory_mib=6000, gpu=0))
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    # 4096 x 3 (no sample) = 12288 > node max 6000
    assert proposal.migrate[0].memory_mib == 6000


def test_no_growth_when_already_at_node_max():
    ctx = oom_context([oom(1, "worker-1")], node_max=Resources(cpu=64, memory_mib=4096, gpu=0))
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty
    assert "largest node" in proposal.reasons[0].message
    assert proposal.source_event_id == 1


def test_gives_up_after_n_ooms_of_the_same_node():
    events = [oom(1, "worker-1", 50), oom(2, "worker-1", 20), oom(3, "worker-1", 1)]
    answered = [plan(source_event_id=1), plan(source_event_id=2)]
    proposal = OomRecoveryOptimizer().propose(oom_context(events, plans=answered), SETTINGS)
    # third OOM reaches give_up_after_ooms=3: say so, do not grow
    assert proposal.is_empty
    assert "3 times" in proposal.reasons[0].message
    assert proposal.source_event_id == 3
    # the same history with a higher limit still grows
    grown = OomRecoveryOptimizer().propose(
        oom_context(events, plans=answered), OomRecoverySettings(give_up_after_ooms=4)
    )
    assert grown.migrate[0].memory_mib == 12288


def test_unknown_node_is_an_empty_proposal():
    ctx = context(Stage.oom, nodes=[WORKER], node="gone", events=[oom(1, "gone")])
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty and proposal.reasons


def test_a_growing_node_is_sized_for_its_growth_not_only_doubled():
    # PS memory grew 200 MiB a minute (6000 -> 8000 over 10 minutes) and the PS was killed
    # at 8192: x2 (16384) holds 41 minutes; the need an hour ahead, (8192 + 200 / 60 x
    # 3600) x 1.2 = 24230.4 -> 24231 MiB
    ps = node("ps-0", "ps", cpu=8, memory_mib=8192)
    samples = series("ps-0", memory_mib=[6000 + 200 * i for i in range(11)])
    ctx = context(Stage.oom, nodes=[ps], node="ps-0", events=[oom(3, "ps-0")], samples=samples)
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate == [NodeChange(role="ps", name="ps-0", cpu=8, memory_mib=24231)]
    assert proposal.reasons[0].evidence["peak_mib"] == 8000
    assert proposal.reasons[0].evidence["growth_mib_per_s"] == 3.3333


def test_a_spike_that_came_and_went_is_no_growth():
    # 1000, 9500, 1000, 15000 five minutes apart: up, down, up; a line through it would
    # project 28 MiB/s for an hour. The fix is x 2 of the killed 8192.
    ps = node("ps-0", "ps", cpu=8, memory_mib=8192)
    samples = series("ps-0", memory_mib=[1000, 9500, 1000, 8000], every_s=300)
    ctx = context(Stage.oom, nodes=[ps], node="ps-0", events=[oom(3, "ps-0")], samples=samples)
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate[0].memory_mib == 16384
    assert proposal.reasons[0].evidence["growth_mib_per_s"] == 0


def test_a_new_ps_killed_before_its_first_sample_is_sized_by_its_tier():
    # ps-1 started at 458 MiB and was killed at once; ps-0 of the same tier held 3043 MiB:
    # 3043 x 1.2 = 3651.6 -> 3652 MiB in one fix, where x 2 (916, 1832, 3664) took three
    tier = [
        node("ps-0", "ps", cpu=2, memory_mib=3652),
        node("ps-1", "ps", cpu=2, memory_mib=458, index=1),
    ]
    samples = series("ps-0", memory_mib=[3043.0] * 4)
    ctx = context(Stage.oom, nodes=tier, node="ps-1", events=[oom(9, "ps-1")], samples=samples)
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate == [NodeChange(role="ps", name="ps-1", cpu=2, memory_mib=3652)]
    assert "no sample before the kill; the other ps nodes: peak 3043 MiB" in (
        proposal.reasons[0].message
    )


def test_identical_workers_are_fixed_by_one_plan_for_the_role():
    workers = [node(f"worker-{i}", "worker", cpu=4, memory_mib=4096, index=i) for i in range(3)]
    ctx = context(Stage.oom, nodes=workers, node="worker-1", events=[oom(4, "worker-1")])
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    # no sample before the kill: x3 of 4096, for every worker at once
    assert proposal.roles == {"worker": RoleSpec(memory_mib=12288)}
    assert proposal.migrate == []
    assert "every worker (3) 4096 -> 12288 MiB" in proposal.reasons[0].message


def test_a_kill_the_roles_fix_already_covers_gets_no_second_plan():
    workers = [node(f"worker-{i}", "worker", cpu=4, memory_mib=8192, index=i) for i in range(3)]
    events = [oom(4, "worker-0", minutes_ago=2), oom(5, "worker-2", minutes_ago=2)]
    # the fix for worker-0's kill was applied 1 minute ago, after worker-2's kill: worker-2
    # died at the old size and was relaunched by that fix
    fix = plan(source_event_id=4, seconds_ago=60, roles={"worker": RoleSpec(memory_mib=8192)})
    ctx = context(Stage.oom, nodes=workers, node="worker-2", events=events, plans=[fix])
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty and proposal.source_event_id == 5
    assert proposal.reasons[0].evidence["covered_by_plan"] == 1
    # a pending fix covers it too; one applied before the kill does not
    pending = replace(fix, status=PlanStatus.proposed, applied_at=None)
    smaller = [replace(w, memory_mib=4096) for w in workers]
    ctx = context(Stage.oom, nodes=smaller, node="worker-2", events=events, plans=[pending])
    assert OomRecoveryOptimizer().propose(ctx, SETTINGS).is_empty
    earlier = plan(source_event_id=4, seconds_ago=600, roles={"worker": RoleSpec(memory_mib=8192)})
    ctx = context(Stage.oom, nodes=workers, node="worker-2", events=events, plans=[earlier])
    assert OomRecoveryOptimizer().propose(ctx, SETTINGS).roles == {
        "worker": RoleSpec(memory_mib=24576)
    }


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    start_mib=st.floats(1000, 16000),
    growth_mib_per_min=st.floats(1, 500),
    size_mib=st.floats(2000, 32000),
)
def test_one_fix_outlasts_linear_growth_for_the_horizon(start_mib, growth_mib_per_min, size_mib):
    """Memory growing linearly, sampled each minute until it passes the size: the fix
    holds the growth for growth_horizon_s (3600 s) after the kill, unless a cap (+32768
    MiB per step, the largest node) stops it, which the reason names."""
    assume(start_mib < size_mib)
    minutes = min(int((size_mib - start_mib) / growth_mib_per_min) + 1, 600)
    assume(minutes >= 3)
    used = [start_mib + growth_mib_per_min * i for i in range(minutes)]
    ps = node("ps-0", "ps", cpu=8, memory_mib=size_mib)
    ctx = context(
        Stage.oom,
        nodes=[ps],
        node="ps-0",
        events=[oom(1, "ps-0", minutes_ago=0)],
        samples=series("ps-0", memory_mib=used),
        node_max=Resources(cpu=64, memory_mib=512 * 1024, gpu=8),
    )
    fixed = OomRecoveryOptimizer().propose(ctx, SETTINGS).migrate[0].memory_mib
    in_an_hour = size_mib + growth_mib_per_min * 60
    assert fixed >= min(in_an_hour, size_mib + SETTINGS.max_step_mib) - 1e-6
