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
