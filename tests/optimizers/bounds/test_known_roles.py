from brain.domain import RoleSpec, Strategy
from brain.optimizing import Proposal
from brain.optimizing.bounds.known_roles import known_roles
from tests.builders.bounds import view
from tests.builders.views import job

ROLES = {"chief": RoleSpec(count=1), "ps": RoleSpec(count=2)}


def test_an_unknown_role_and_a_count_of_zero_are_dropped():
    proposal = Proposal(
        roles={
            "evaluator": RoleSpec(count=1),  # not the job's, not a trainer of a PS job
            "worker": RoleSpec(count=3),  # a PS job's trainer role: allowed
            "ps": RoleSpec(count=0, cpu=4),  # 0 of the 2 asked for: the count goes
        }
    )
    bounded, reasons = known_roles(proposal, view(job(roles=ROLES, strategy=Strategy.ps)))
    assert bounded.roles == {"worker": RoleSpec(count=3), "ps": RoleSpec(cpu=4)}
    assert [r.evidence for r in reasons] == [
        {"role": "evaluator", "job_roles": ["chief", "ps", "worker"]},
        {"role": "ps", "declared_count": 2},
    ]


def test_a_role_left_with_nothing_to_change_is_left_out():
    bounded, _ = known_roles(Proposal(roles={"ps": RoleSpec(count=0)}), view(job(roles=ROLES)))
    assert bounded.roles == {}
