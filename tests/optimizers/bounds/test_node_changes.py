from brain.domain import Limits, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.node_changes import node_changes
from tests.builders.bounds import view
from tests.builders.views import job, node

ROLES = {"worker": RoleSpec(count=2, cpu=4, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}
NODES = [
    node("worker-0", "worker", 4, 8192),
    node("worker-1", "worker", 4, 8192, index=1),
    node("ps-0", "ps", 8, 8192),
]


def test_a_migration_gets_the_headroom_left_and_a_launch_that_does_not_fit_goes():
    # 2 x 4 + 8 = 16 of 20 cores: ps-0 8 -> 14 is granted 12; nothing is left for a
    # 4-core worker
    proposal = Proposal(
        migrate=[NodeChange(role="ps", name="ps-0", cpu=14)],
        launch=[NodeChange(role="worker", cpu=4, memory_mib=8192)],
    )
    bounded, reasons = node_changes(proposal, view(job(roles=ROLES, limits=Limits(cpu=20)), NODES))
    assert bounded.migrate == [NodeChange(role="ps", name="ps-0", cpu=12)]
    assert bounded.launch == []
    assert [r.message for r in reasons] == [
        "migrate ps-0: cpu 8 -> 14 would exceed the job's cpu limit 20 (16 requested): granted 12",
        "launch worker: cpu 0 -> 4 would exceed the job's cpu limit 20 (20 requested): gave it up",
        "dropped the launch of a worker: it does not fit the limits",
    ]


def test_shrinking_is_free():
    smaller = NodeChange(role="ps", name="ps-0", cpu=6)
    proposal = Proposal(migrate=[smaller])
    bounding = view(job(roles=ROLES, limits=Limits(cpu=16)), NODES)
    assert node_changes(proposal, bounding) == (proposal, [])


def test_what_a_shrinking_migration_frees_is_headroom_for_a_growth():
    # 3 PS of 8 cores (24 of 26): ps-0 8 -> 13.2 with ps-1 and ps-2 8 -> 4.7 and 3.9 in
    # the same plan: 13.2 + 4.7 + 3.9 = 21.8 <= 26, whatever the order. Counted alone,
    # the growth would get the 2 cores of room only (10).
    ps = {"ps": RoleSpec(count=3, cpu=8, memory_mib=8192)}
    nodes = [node(f"ps-{i}", "ps", 8, 8192, index=i) for i in range(3)]
    moves = [
        NodeChange(role="ps", name="ps-0", cpu=13.2),
        NodeChange(role="ps", name="ps-1", cpu=4.7),
        NodeChange(role="ps", name="ps-2", cpu=3.9),
    ]
    bounded, reasons = node_changes(
        Proposal(migrate=moves), view(job(roles=ps, limits=Limits(cpu=26)), nodes)
    )
    assert (bounded.migrate, reasons) == (moves, [])
    # Alone, the growth gets the room
    alone, _ = node_changes(
        Proposal(migrate=moves[:1]), view(job(roles=ps, limits=Limits(cpu=26)), nodes)
    )
    assert alone.migrate == [NodeChange(role="ps", name="ps-0", cpu=10)]


def test_a_migration_is_measured_from_the_size_the_plans_role_gives_the_node():
    # The plan takes the PS role from 1 PS of 8 cores to 3 of 2 (the master relaunches
    # ps-0 at 2) and migrates ps-0's memory, carrying its 8 cores. Those are 6 cores over
    # the 2 the role gives it: 3 x 2 + 2 x 4 = 14 of 16 cores leaves 2, so ps-0 gets 4.
    # Measured from its 8 cores before the plan, the migration added nothing and kept 8:
    # 8 + 2 x 2 + 2 x 4 = 20 cores once applied, over the 16-core limit.
    proposal = Proposal(
        roles={"ps": RoleSpec(count=3, cpu=2)},
        migrate=[NodeChange(role="ps", name="ps-0", cpu=8, memory_mib=12000)],
    )
    bounded, reasons = node_changes(proposal, view(job(roles=ROLES, limits=Limits(cpu=16)), NODES))
    assert bounded.migrate == [NodeChange(role="ps", name="ps-0", cpu=4, memory_mib=12000)]
    assert [r.message for r in reasons] == [
        "migrate ps-0: cpu 2 -> 8 would exceed the job's cpu limit 16 (14 requested): granted 4"
    ]
