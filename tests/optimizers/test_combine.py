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


def test_a_migration_from_the_proposal_that_sets_the_role_count_sets_the_nodes_cpu():
    # hot_ps moves ps-0 to 13.4 cores for today's 2 PS; ps_scaling goes to 4 PS and keeps
    # ps-0 apart at 6 cores for its share of the 4. Its CPU holds, in either order; the
    # memory is still the larger (a memory fix must hold).
    hot = Proposal(migrate=[NodeChange(role="ps", name="ps-0", cpu=13.4, memory_mib=12000)])
    scaling = Proposal(
        roles={"ps": RoleSpec(count=4, cpu=2)},
        migrate=[NodeChange(role="ps", name="ps-0", cpu=6, memory_mib=8192)],
    )
    expected = [NodeChange(role="ps", name="ps-0", cpu=6, memory_mib=12000)]
    assert combine([("hot_ps", hot), ("ps_scaling", scaling)]).migrate == expected
    assert combine([("ps_scaling", scaling), ("hot_ps", hot)]).migrate == expected
    # a proposal that sets the role's size but not its count merges as before
    resized = Proposal(
        roles={"ps": RoleSpec(cpu=2)},
        migrate=[NodeChange(role="ps", name="ps-0", cpu=6, memory_mib=8192)],
    )
    assert combine([("hot_ps", hot), ("other", resized)]).migrate == [
        NodeChange(role="ps", name="ps-0", cpu=13.4, memory_mib=12000)
    ]
