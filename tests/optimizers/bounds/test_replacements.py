from brain.domain import RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.replacements import replacements
from tests.builders.bounds import view
from tests.builders.views import job, node

NODES = [node("worker-0", "worker", 4, 8192), node("worker-1", "worker", 4, 8192, index=1)]
SAME = NodeChange(role="worker", name="worker-0", cpu=4, memory_mib=8192)
LARGER = NodeChange(role="worker", name="worker-1", cpu=6)


def test_a_same_size_migration_an_earlier_step_dropped_comes_back():
    proposed = Proposal(migrate=[SAME, LARGER])
    bounded, reasons = replacements(Proposal(), view(job(), NODES, proposed=proposed))
    # worker-0 moves at its own 4 cores / 8192 MiB: back; worker-1 grows: it stays out
    assert bounded.migrate == [SAME] and reasons == []


def test_a_node_also_asked_to_grow_is_no_replacement():
    proposed = Proposal(migrate=[SAME, NodeChange(role="worker", name="worker-0", cpu=5)])
    assert replacements(Proposal(), view(job(), NODES, proposed=proposed)) == (Proposal(), [])


def test_a_same_size_migration_an_earlier_step_cut_is_not_added_again():
    # The plan gave the role fewer cores and kept worker-0 at its 4: the limits held 3.5,
    # so node_changes cut it. Adding the asked 4 back would migrate worker-0 twice, the
    # last one past the limits.
    cut = NodeChange(role="worker", name="worker-0", cpu=3.5, memory_mib=8192)
    proposed = Proposal(migrate=[SAME])
    bounded, _ = replacements(Proposal(migrate=[cut]), view(job(), NODES, proposed=proposed))
    assert bounded.migrate == [cut]


def test_a_move_at_todays_size_beside_a_resized_role_is_no_replacement():
    # Found by the plan properties: the plan takes the PS role from 1 core to 0.5 (12 PS)
    # and keeps ps-2, the busiest, at its 1 core: once the role applies that move adds 0.5
    # core, which the limit did not hold, so node_changes gave it up. It is growth, not a
    # node replaced at its size: it stays out.
    nodes = [node(f"ps-{i}", "ps", 1, 1024, index=i) for i in range(3)]
    roles = {"ps": RoleSpec(count=3, cpu=1, memory_mib=1024)}
    keep_ps_2 = NodeChange(role="ps", name="ps-2", cpu=1, memory_mib=1024)
    resized = {"ps": RoleSpec(count=12, cpu=0.5)}
    proposed = Proposal(roles=resized, migrate=[keep_ps_2])
    bounding = view(job(roles=roles), nodes, proposed=proposed)
    assert replacements(Proposal(roles=resized), bounding) == (Proposal(roles=resized), [])
    # Without the resize the same move keeps ps-2's size: a replacement, back in the plan
    unchanged = Proposal(migrate=[keep_ps_2])
    bounding = view(job(roles=roles), nodes, proposed=unchanged)
    assert replacements(Proposal(), bounding)[0].migrate == [keep_ps_2]
