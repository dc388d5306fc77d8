from brain.domain import RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.named_removals import named_removals
from tests.builders.bounds import view
from tests.builders.views import job, node

NODES = [node(f"worker-{i}", "worker", 4, 8192, index=i) for i in range(5)]


def test_a_shrinking_role_removes_its_highest_indices():
    # 5 -> 2 with worker-1 already named: of worker-0, 2, 3, 4 two stay, 4 and 3 go
    named = NodeChange(role="worker", name="worker-1")
    proposal = Proposal(roles={"worker": RoleSpec(count=2)}, remove=[named])
    bounded, reasons = named_removals(proposal, view(job(), NODES))
    assert bounded.remove == [
        named,
        NodeChange(role="worker", name="worker-4"),
        NodeChange(role="worker", name="worker-3"),
    ]
    assert reasons[0].message == (
        "worker goes from 5 to 2 nodes: removes worker-4, worker-3 "
        "(highest index first: the elastic ones)"
    )


def test_a_growing_role_removes_nothing():
    proposal = Proposal(roles={"worker": RoleSpec(count=7)})
    assert named_removals(proposal, view(job(), NODES)) == (proposal, [])
