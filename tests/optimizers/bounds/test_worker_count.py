from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.worker_count import worker_count
from tests.builders.bounds import view
from tests.builders.views import job

ROLES = {
    "chief": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=2, cpu=4, memory_mib=8192),
    "ps": RoleSpec(count=1, cpu=8, memory_mib=8192),
}


def test_workers_are_given_up_until_the_job_fits():
    proposal = Proposal(roles={"worker": RoleSpec(count=6)})
    # 4 + 6 x 4 + 8 = 36 cores > 26: 4 + 3 x 4 + 8 = 24 fits, 4 workers (28) do not
    bounded, reasons = worker_count(proposal, view(job(roles=ROLES, limits=Limits(cpu=26))))
    assert bounded.roles == {"worker": RoleSpec(count=3)}
    assert reasons[0].evidence == {"workers_before": 6, "workers_after": 3}
    assert reasons[0].threshold == {"cpu": 26}


def test_never_below_min_count():
    bounds = {"worker": RoleBounds(min_count=4)}
    proposal = Proposal(roles={"worker": RoleSpec(count=6)})
    bounding = view(job(roles=ROLES, limits=Limits(cpu=26), bounds=bounds))
    bounded, reasons = worker_count(proposal, bounding)
    # 4 workers (28 cores) still exceed 26: the size cuts take the rest
    assert bounded.roles == {"worker": RoleSpec(count=4)}
    assert reasons[0].threshold == {"cpu": 26, "min_count": 4}


def test_a_job_within_its_limits_is_not_touched():
    proposal = Proposal(roles={"worker": RoleSpec(count=3)})
    assert worker_count(proposal, view(job(roles=ROLES, limits=Limits(cpu=24)))) == (proposal, [])
