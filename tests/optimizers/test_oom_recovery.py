from brain.domain import PlanStatus, Resources, Stage
from brain.optimizing import NodeChange
from optimizers.oom_recovery import OomRecoveryOptimizer, OomRecoverySettings
from tests.builders.views import context, node, oom, plan

SETTINGS = OomRecoverySettings()  # x2, at most +32768 MiB, give up after 3 OOMs
WORKER = node("worker-1", "worker", cpu=4, memory_mib=4096)


def oom_context(events, plans=(), the_node=WORKER, node_max=None):
    kwargs = {"node_max": node_max} if node_max else {}
    return context(
        Stage.oom, nodes=[the_node], node=the_node.name, events=events, plans=plans, **kwargs
    )


def test_oom_doubles_memory_and_names_the_event():
    proposal = OomRecoveryOptimizer().propose(oom_context([oom(7, "worker-1")]), SETTINGS)
    # 4096 x 2 = 8192, under +32768 and the node max
    assert proposal.migrate == [NodeChange(role="worker", name="worker-1", cpu=4, memory_mib=8192)]
    assert proposal.source_event_id == 7
    assert proposal.reasons[0].threshold["memory_factor"] == 2.0


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
    # 4096 x 2 = 8192 > node max 6000
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
    assert grown.migrate[0].memory_mib == 8192


def test_unknown_node_is_an_empty_proposal():
    ctx = context(Stage.oom, nodes=[WORKER], node="gone", events=[oom(1, "gone")])
    proposal = OomRecoveryOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty and proposal.reasons
