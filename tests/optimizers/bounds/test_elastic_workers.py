from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.elastic_workers import elastic_workers
from tests.builders.bounds import view
from tests.builders.views import job, node

ROLES = {"worker": RoleSpec(count=2, cpu=4, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}
NODES = [
    node("worker-0", "worker", 4, 8192),
    node("worker-1", "worker", 4, 8192, index=1),
    node("ps-0", "ps", 8, 8192),
]
PS_TO_12 = NodeChange(role="ps", name="ps-0", cpu=12)


def test_added_workers_make_room_for_the_plans_migration():
    # 5 workers x 4 + ps 8 = 28 of 32 cores: ps-0 8 -> 12 needs 4 more, left 4: fits;
    # 6 workers leave 0: one elastic worker goes first
    proposal = Proposal(roles={"worker": RoleSpec(count=6)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=32)), NODES)
    )
    assert bounded.roles == {"worker": RoleSpec(count=5)}
    assert bounded.migrate == [PS_TO_12]  # the next step fits it
    assert reasons[0].evidence == {"workers_planned": 6, "workers_after": 5, "workers_now": 2}


def test_not_below_min_count_nor_what_runs():
    bounds = {"worker": RoleBounds(min_count=6)}
    proposal = Proposal(roles={"worker": RoleSpec(count=6)}, migrate=[PS_TO_12])
    bounding = view(job(roles=ROLES, limits=Limits(cpu=32), bounds=bounds), NODES)
    assert elastic_workers(proposal, bounding) == (proposal, [])


def test_workers_made_smaller_for_the_ones_given_up_keep_their_size_where_it_fits():
    # 2 workers of 4 + ps 8 = 16 of 20 cores. The plan: 3 workers of 3.5 (one more made
    # to fit) and ps-0 8 -> 12: 10.5 + 12 = 22.5 > 20. Given up to 2, none is added, and
    # at their 4 cores (8 + 12 = 20) the move fits: they keep them.
    proposal = Proposal(roles={"worker": RoleSpec(count=3, cpu=3.5)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=20)), NODES)
    )
    assert bounded.roles == {}
    assert bounded.migrate == [PS_TO_12]
    assert reasons[0].evidence["worker_cpu_kept"] == 4
    assert reasons[0].message.endswith(
        "with none added, the workers keep their 4 cores (the plan made them 3.5 to fit the "
        "ones given up)"
    )
    # Under 19 cores the move needs the 1 core the smaller size frees (7 + 12 = 19; at 4
    # cores 20): the workers still get 3.5, and the reason says why
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=19)), NODES)
    )
    assert bounded.roles == {"worker": RoleSpec(cpu=3.5)}
    assert "worker_cpu_kept" not in reasons[0].evidence
    assert reasons[0].message.endswith(
        "with none added, the workers still go 4 -> 3.5 cores: the launches and migrations "
        "need the cores that frees"
    )
    # 4 workers of 3 planned under 23.5 cores: 3 (9 + 12 = 21 <= 23.5, 4: 24) still add
    # one, at the size made for them
    four = Proposal(roles={"worker": RoleSpec(count=4, cpu=3)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(four, view(job(roles=ROLES, limits=Limits(cpu=23.5)), NODES))
    assert bounded.roles == {"worker": RoleSpec(count=3, cpu=3)}
    assert "worker_cpu_kept" not in reasons[0].evidence
