from brain.domain import Limits, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.size_cuts import size_cuts
from tests.builders.bounds import view
from tests.builders.views import job

ROLES = {"chief": RoleSpec(count=1, cpu=8, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}


def test_the_plans_growth_goes_first():
    proposal = Proposal(roles={"ps": RoleSpec(cpu=12)})
    bounded, reasons = size_cuts(proposal, view(job(roles=ROLES, limits=Limits(cpu=18))))
    # 8 + 12 = 20 > 18: the growth of 4 keeps 2, ps 8 -> 10 (18 in all)
    assert bounded.roles == {"ps": RoleSpec(cpu=10)}
    assert reasons[0].message == (
        "cut the plan's growth of cpu to fit the job's cpu limit 18 cores: ps 8 -> 12 cut to 10"
    )


def test_then_every_size_in_the_same_proportion():
    bounded, reasons = size_cuts(Proposal(), view(job(roles=ROLES, limits=Limits(cpu=15))))
    # no growth to take back: 16 cores x 15 / 16, 7.5 each
    assert bounded.roles == {"chief": RoleSpec(cpu=7.5), "ps": RoleSpec(cpu=7.5)}
    assert reasons[0].evidence == {
        "field": "cpu",
        "planned_total": 16.0,
        "cuts": ["chief 8 -> 7.5", "ps 8 -> 7.5"],
    }


def test_a_gpu_cannot_go_below_one_and_that_is_said():
    roles = {"worker": RoleSpec(count=3, cpu=1, gpu=1)}
    bounded, reasons = size_cuts(Proposal(), view(job(roles=roles, limits=Limits(gpu=2))))
    # 3 GPUs x 2 / 3 = 0.67 rounds down to 0: no cut; the job still exceeds
    assert bounded.roles == {}
    assert reasons[-1].message == "the job still exceeds its limits: gpu 3 > 2"
