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


def test_a_plan_repeating_the_role_size_keeps_a_migrated_node_at_its_own_size():
    # The slow-worker scenario's shape: workers of 3.9 cores, worker 0 moved to a fresh
    # node at 4.3, one PS of 8.9. A plan asking 10 workers and repeating cpu=3.9 resizes
    # nothing, so worker 0 stays at 4.3: 8.9 + 4.3 + 9 x 3.9 = 48.3 > 48, and only 9
    # workers fit (8.9 + 4.3 + 8 x 3.9 = 44.4). Counted as if the plan resized worker 0
    # to 3.9 the 10 workers made 47.9 and passed, and the job ran at 48.3.
    roles = {
        "worker": RoleSpec(count=9, cpu=3.9, memory_mib=4096),
        "ps": RoleSpec(count=1, cpu=8.9, memory_mib=8192),
    }
    nodes = [node("ps-0", "ps", 8.9, 8192, index=0), node("worker-0", "worker", 4.3, 4096)]
    nodes += [node(f"worker-{i}", "worker", 3.9, 4096, index=i) for i in range(1, 9)]
    proposal = Proposal(roles={"worker": RoleSpec(count=10, cpu=3.9, memory_mib=4096)})
    limited = job(roles=roles, limits=Limits(cpu=48))
    bounded, reasons = worker_count(proposal, view(limited, nodes))
    # Back to the 9 workers it runs: no count in the plan, the sizes as asked.
    assert bounded.roles == {"worker": RoleSpec(cpu=3.9, memory_mib=4096)}
    assert reasons[0].evidence == {"workers_before": 10, "workers_after": 9}
    # A plan that does resize the workers relaunches every one at the new size, worker 0
    # included: 8.9 + 10 x 3.8 = 46.9 fits.
    resized = Proposal(roles={"worker": RoleSpec(count=10, cpu=3.8, memory_mib=4096)})
    assert worker_count(resized, view(limited, nodes)) == (resized, [])
