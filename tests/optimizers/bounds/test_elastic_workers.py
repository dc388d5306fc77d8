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
