from brain.domain import RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.node_sizes import launch_sizes, migration_sizes, role_sizes
from tests.builders.bounds import view


def test_role_sizes_are_capped_at_the_largest_node_and_invalid_ones_dropped():
    # the largest node: 16 cores, 65536 MiB, 8 GPUs
    proposal = Proposal(roles={"ps": RoleSpec(count=-1, cpu=20, cpu_limit=24, memory_mib=0)})
    bounded, reasons = role_sizes(proposal, view())
    assert bounded.roles == {"ps": RoleSpec(cpu=16, cpu_limit=16)}
    assert [r.message for r in reasons] == [
        "capped ps.cpu from 20 to the largest node's 16",
        "capped ps.cpu_limit from 24 to the largest node's 16",
        "dropped ps.memory_mib=0: sizes must be positive",
        "dropped ps.count=-1: counts cannot be negative",
    ]


def test_a_gpu_count_of_zero_is_a_size():
    bounded, reasons = role_sizes(Proposal(roles={"worker": RoleSpec(gpu=0)}), view())
    assert bounded.roles == {"worker": RoleSpec(gpu=0)} and reasons == []


def test_launches_and_migrations_are_bounded_by_their_own_steps():
    proposal = Proposal(
        launch=[NodeChange(role="ps", cpu=-2, memory_mib=70000)],
        migrate=[NodeChange(role="worker", name="worker-0", gpu=9)],
    )
    launched, launch_reasons = launch_sizes(proposal, view())
    assert launched.launch == [NodeChange(role="ps", memory_mib=65536)]
    assert launched.migrate == proposal.migrate  # not this step's
    assert [r.message for r in launch_reasons] == [
        "dropped launch ps.cpu=-2: sizes must be positive",
        "capped launch ps.memory_mib from 70000 to the largest node's 65536",
    ]
    migrated, migrate_reasons = migration_sizes(proposal, view())
    assert migrated.migrate == [NodeChange(role="worker", name="worker-0", gpu=8)]
    assert [r.message for r in migrate_reasons] == [
        "capped migrate worker-0.gpu from 9 to the largest node's 8"
    ]
