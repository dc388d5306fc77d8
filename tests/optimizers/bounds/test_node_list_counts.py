from brain.domain import RoleBounds, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.node_list_counts import node_list_counts
from tests.builders.bounds import view
from tests.builders.views import job, node

BOUNDS = {"ps": RoleBounds(min_count=1, max_count=3), "worker": RoleBounds(min_count=2)}
NODES = [node("ps-0", "ps", 8, 8192), node("ps-1", "ps", 8, 8192, index=1)] + [
    node(f"worker-{i}", "worker", 4, 8192, index=i) for i in range(3)
]


def test_launches_past_max_count_and_removals_below_min_count_are_dropped_last_first():
    first, second = NodeChange(role="ps", cpu=8), NodeChange(role="ps", cpu=12)
    gone = [NodeChange(role="worker", name=f"worker-{i}") for i in (2, 1)]
    proposal = Proposal(launch=[first, second], remove=gone)
    bounded, reasons = node_list_counts(proposal, view(job(bounds=BOUNDS), NODES))
    # PS 2 + 2 = 4 > 3: the second launch goes; workers 3 - 2 = 1 < 2: worker-1 stays
    assert bounded.launch == [first]
    assert bounded.remove == [NodeChange(role="worker", name="worker-2")]
    assert [r.message for r in reasons] == [
        "dropped 1 launch(s) of ps: 2 -> 4 nodes would leave its bounds, 3 allowed",
        "dropped 1 removal(s) of worker: 3 -> 1 nodes would leave its bounds, 2 allowed",
    ]


def test_a_role_whose_count_the_plan_sets_is_left_to_the_count():
    launch = [NodeChange(role="ps")] * 3
    proposal = Proposal(roles={"ps": RoleSpec(count=3)}, launch=launch)
    assert node_list_counts(proposal, view(job(bounds=BOUNDS), NODES)) == (proposal, [])
