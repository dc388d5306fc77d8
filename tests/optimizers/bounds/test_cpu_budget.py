from brain.domain import Limits, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.cpu_budget import cpu_budget
from tests.builders.bounds import view
from tests.builders.views import job


def test_the_budget_stands_in_for_a_missing_cpu_limit_and_says_so():
    proposal = Proposal(roles={"worker": RoleSpec(count=64)})
    bounding = view(job(limits=Limits(memory_mib=9000)), default_job_cpu=24)
    same, reasons = cpu_budget(proposal, bounding)
    assert same == proposal  # the step only says it; the view's job carries the limit
    assert bounding.job.limits == Limits(cpu=24, memory_mib=9000)
    assert [r.threshold for r in reasons] == [{"default_job_cpu": 24}]
    assert reasons[0].message.startswith("the job has no CPU limit: the site's budget of 24")


def test_a_job_with_its_own_cpu_limit_keeps_it():
    bounding = view(job(limits=Limits(cpu=10)), default_job_cpu=24)
    assert cpu_budget(Proposal(), bounding) == (Proposal(), [])
    assert bounding.job.limits.cpu == 10
