from brain.domain import RoleSpec
from brain.optimizing import NodeChange, Proposal, Reason
from brain.optimizing.combine import combine


def test_combine_merges_roles_fieldwise_and_keeps_the_larger_migration():
    estimate = Proposal(
        roles={"worker": RoleSpec(count=5, cpu=2.4), "ps": RoleSpec(count=2)},
        launch=[NodeChange(role="worker")],
        reasons=[Reason("estimate", "e")],
    )
    tuning = Proposal(roles={"worker": RoleSpec(count=7)}, reasons=[Reason("worker_tuning", "t")])
    risk = Proposal(
        migrate=[NodeChange(role="ps", name="ps-0", cpu=8, memory_mib=12000)], source_event_id=4
    )
    hot = Proposal(
        migrate=[
            NodeChange(role="ps", name="ps-0", cpu=12.7, memory_mib=10000),
            NodeChange(role="ps", name="ps-1", cpu=12),
        ],
        launch=[NodeChange(role="ps")],
    )
    merged = combine(
        [("estimate", estimate), ("worker_tuning", tuning), ("oom_risk", risk), ("hot_ps", hot)]
    )
    # later count 7 overrides 5, the earlier cpu 2.4 stays
    assert merged.roles == {"worker": RoleSpec(count=7, cpu=2.4), "ps": RoleSpec(count=2)}
    # ps-0 migrated twice: the larger CPU of hot_ps and the larger memory of oom_risk
    assert merged.migrate == [
        NodeChange(role="ps", name="ps-0", cpu=12.7, memory_mib=12000),
        NodeChange(role="ps", name="ps-1", cpu=12),
    ]
    assert merged.launch == [NodeChange(role="worker"), NodeChange(role="ps")]
    assert merged.source_event_id == 4
    assert [r.optimizer for r in merged.reasons] == ["estimate", "guard", "worker_tuning"]
    assert merged.reasons[1].evidence == {
        "role": "worker",
        "field": "count",
        "earlier": 5,
        "later": 7,
    }
