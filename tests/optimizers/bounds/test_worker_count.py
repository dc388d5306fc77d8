from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.worker_count import worker_count
from tests.builders.bounds import view
from tests.builders.views import job, node

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


def test_a_failed_node_coming_back_counts_at_its_own_size():
    # 2 PS of 8 cores by the role; PS 0 was migrated to 12 and has failed, so only PS 1
    # runs. The master brings PS 0 back at 12: the job runs 4 + 2 x 4 + 8 + 12 = 32 of
    # its 34 cores, and 1 more worker does not fit. Counted at its role's 8 cores (28),
    # it did: 3 workers, 36 cores once PS 0 is back.
    roles = ROLES | {"ps": RoleSpec(count=2, cpu=8, memory_mib=8192)}
    running = [node("ps-1", "ps", 8, 8192, index=1)]
    failed = [node("ps-0", "ps", 12, 8192, index=0)]
    proposal = Proposal(roles={"worker": RoleSpec(count=3)})
    limited = job(roles=roles, limits=Limits(cpu=34))
    bounded, reasons = worker_count(proposal, view(limited, running, failed_nodes=failed))
    assert bounded.roles == {}  # back to the 2 workers it runs: no change
    assert reasons[0].evidence == {"workers_before": 3, "workers_after": 2}
    # Without the failed node the same plan fits (the place counted at 8 cores).
    assert worker_count(proposal, view(limited, running)) == (proposal, [])
    # A failed node smaller than its role counts at the role's size: a new node would be.
    small = [node("ps-0", "ps", 2, 8192, index=0)]
    assert worker_count(proposal, view(limited, running, failed_nodes=small)) == (proposal, [])
