from brain.domain import RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.role_counts import role_counts
from tests.builders.bounds import view
from tests.builders.views import job, node

BOUNDS = {"worker": RoleBounds(min_count=2, max_count=6), "ps": RoleBounds(max_count=3)}


def test_counts_are_clipped_into_the_roles_bounds():
    proposal = Proposal(roles={"worker": RoleSpec(count=9, cpu=4), "ps": RoleSpec(count=2)})
    bounded, reasons = role_counts(proposal, view(job(bounds=BOUNDS)))
    # 9 > max_count 6; the PS count 2 is within its bounds and stays
    assert bounded.roles == {"worker": RoleSpec(count=6, cpu=4), "ps": RoleSpec(count=2)}
    assert [r.message for r in reasons] == [
        "clipped worker.count from 9 to 6: the job's max_count is 6"
    ]
    assert reasons[0].threshold == {"min_count": 2, "max_count": 6}


def test_a_count_clipped_back_to_what_runs_is_no_change():
    nodes = [node(f"worker-{i}", "worker", 4, 8192, index=i) for i in range(2)]
    proposal = Proposal(roles={"worker": RoleSpec(count=1)})
    bounded, reasons = role_counts(proposal, view(job(bounds=BOUNDS), nodes))
    # 1 < min_count 2, and 2 workers run already: nothing left to change
    assert bounded.roles == {}
    assert reasons[0].message == (
        "clipped worker.count from 1 to 2: the job's min_count is 2 and worker already runs 2"
    )
