"""No plan leaves a CPU limit below the CPU request (Kubernetes rejects the pod)."""

from brain.domain import RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.bounds.cpu_limits import cpu_limits
from tests.builders.bounds import NODE_MAX, view
from tests.builders.views import job

ROLES = {"worker": RoleSpec(count=3, cpu=4, memory_mib=8192, cpu_limit=4.8)}


def test_a_raised_request_raises_the_limit_it_would_pass():
    # The estimate gave workers 4 cores and a 4.8-core limit; a plan raising the request
    # to 6 cores alone would leave the limit 1.2 cores under it.
    bounded = enforce_bounds(
        Proposal(roles={"worker": RoleSpec(cpu=6)}), job(roles=ROLES), [], NODE_MAX
    )
    assert bounded.roles == {"worker": RoleSpec(cpu=6, cpu_limit=6)}
    assert bounded.reasons[-1].message == (
        "raised worker.cpu_limit from 4.8 to its request 6 cores: a limit below the request "
        "is rejected"
    )


def test_a_limit_planned_below_the_request_is_raised_too():
    proposal = Proposal(roles={"worker": RoleSpec(cpu=5, cpu_limit=4.5)})
    bounded, _ = cpu_limits(proposal, view(job(roles=ROLES)))
    assert bounded.roles == {"worker": RoleSpec(cpu=5, cpu_limit=5)}


def test_a_limit_at_or_above_the_request_or_none_stays():
    for proposal in (
        Proposal(roles={"worker": RoleSpec(cpu=4.8)}),
        Proposal(roles={"worker": RoleSpec(cpu=2)}),
    ):
        assert cpu_limits(proposal, view(job(roles=ROLES))) == (proposal, [])
    no_limit = job(roles={"worker": RoleSpec(count=3, cpu=4)})
    raised = Proposal(roles={"worker": RoleSpec(cpu=9)})
    assert cpu_limits(raised, view(no_limit)) == (raised, [])
