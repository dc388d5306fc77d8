from brain.domain import RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.change_factor import change_factor
from tests.builders.bounds import view
from tests.builders.views import job

ROLES = {"ps": RoleSpec(count=2, cpu=4, memory_mib=8192)}


def test_counts_and_sizes_move_at_most_the_factor():
    proposal = Proposal(roles={"ps": RoleSpec(count=20, cpu=0.5, memory_mib=9000)})
    bounded, reasons = change_factor(proposal, view(job(roles=ROLES), max_change_factor=4))
    # count 2 -> 20 cut to ceil(2 x 4) = 8; cpu 4 -> 0.5 raised to 4 / 4 = 1; memory
    # 8192 -> 9000 is within 4x and stays
    assert bounded.roles == {"ps": RoleSpec(count=8, cpu=1.0, memory_mib=9000)}
    assert reasons[0].evidence["changes"] == [
        "count 2 -> 20 cut to 8",
        "cpu 4 -> 0.5 cut to 1",
    ]


def test_an_oom_fix_and_an_unset_factor_are_not_bounded():
    proposal = Proposal(roles={"ps": RoleSpec(memory_mib=100000)}, source_event_id=7)
    assert change_factor(proposal, view(job(roles=ROLES), max_change_factor=2)) == (proposal, [])
    unfixed = Proposal(roles={"ps": RoleSpec(memory_mib=100000)})
    assert change_factor(unfixed, view(job(roles=ROLES))) == (unfixed, [])
