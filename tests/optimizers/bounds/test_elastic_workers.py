from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds import run_chain
from brain.optimizing.bounds.elastic_workers import elastic_workers
from tests.builders.bounds import view
from tests.builders.views import job, node

ROLES = {"worker": RoleSpec(count=2, cpu=4, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}
NODES = [
    node("worker-0", "worker", 4, 8192),
    node("worker-1", "worker", 4, 8192, index=1),
    node("ps-0", "ps", 8, 8192),
]
PS_TO_12 = NodeChange(role="ps", name="ps-0", cpu=12)


def test_added_workers_make_room_for_the_plans_migration():
    # 5 workers x 4 + ps 8 = 28 of 32 cores: ps-0 8 -> 12 needs 4 more, left 4: fits;
    # 6 workers leave 0: one elastic worker goes first
    proposal = Proposal(roles={"worker": RoleSpec(count=6)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=32)), NODES)
    )
    assert bounded.roles == {"worker": RoleSpec(count=5)}
    assert bounded.migrate == [PS_TO_12]  # the next step fits it
    assert reasons[0].evidence == {"workers_planned": 6, "workers_after": 5, "workers_now": 2}


def test_not_below_min_count_nor_what_runs():
    bounds = {"worker": RoleBounds(min_count=6)}
    proposal = Proposal(roles={"worker": RoleSpec(count=6)}, migrate=[PS_TO_12])
    bounding = view(job(roles=ROLES, limits=Limits(cpu=32), bounds=bounds), NODES)
    assert elastic_workers(proposal, bounding) == (proposal, [])


def test_workers_made_smaller_for_the_ones_given_up_keep_their_size_where_it_fits():
    # 2 workers of 4 + ps 8 = 16 of 20 cores. The plan: 3 workers of 3.5 (one more made
    # to fit) and ps-0 8 -> 12: 10.5 + 12 = 22.5 > 20. Given up to 2, none is added, and
    # at their 4 cores (8 + 12 = 20) the move fits: they keep them.
    proposal = Proposal(roles={"worker": RoleSpec(count=3, cpu=3.5)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=20)), NODES)
    )
    assert bounded.roles == {}
    assert bounded.migrate == [PS_TO_12]
    assert reasons[0].evidence["worker_cpu_kept"] == 4
    assert reasons[0].message.endswith(
        "with none added, the workers keep their 4 cores (the plan made them 3.5 to fit the "
        "ones given up)"
    )
    # Under 19 cores the move needs the 1 core the smaller size frees (7 + 12 = 19; at 4
    # cores 20): the workers still get 3.5, and the reason says why
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=ROLES, limits=Limits(cpu=19)), NODES)
    )
    assert bounded.roles == {"worker": RoleSpec(cpu=3.5)}
    assert "worker_cpu_kept" not in reasons[0].evidence
    assert reasons[0].message.endswith(
        "with none added, the workers still go 4 -> 3.5 cores: the job's limits, the "
        "launches and the migrations need the cores that frees"
    )
    # 4 workers of 3 planned under 23.5 cores: 3 (9 + 12 = 21 <= 23.5, 4: 24) still add
    # one, at the size made for them
    four = Proposal(roles={"worker": RoleSpec(count=4, cpu=3)}, migrate=[PS_TO_12])
    bounded, reasons = elastic_workers(four, view(job(roles=ROLES, limits=Limits(cpu=23.5)), NODES))
    assert bounded.roles == {"worker": RoleSpec(count=3, cpu=3)}
    assert "worker_cpu_kept" not in reasons[0].evidence


def test_workers_of_a_job_above_its_limit_get_the_most_that_fits_not_todays_size():
    # 2 workers of 8 + ps 8 = 24 cores, above the limit of 20 lowered since. The plan: 3
    # workers of 4 (one more made to fit: 12 + 8 = 20) and ps-0 8 -> 10 cores: 22 > 20.
    # Given up to 2, none is added; at today's 8 cores the roles alone hold 24 > 20. At c
    # cores each, 2c + 8 + the move's 2 <= 20 holds up to c = 5: the workers get 5.
    roles = {"worker": RoleSpec(count=2, cpu=8), "ps": RoleSpec(count=1, cpu=8)}
    nodes = [
        node("worker-0", "worker", 8, 8192),
        node("worker-1", "worker", 8, 8192, index=1),
        node("ps-0", "ps", 8, 8192),
    ]
    ps_to_10 = NodeChange(role="ps", name="ps-0", cpu=10)
    proposal = Proposal(roles={"worker": RoleSpec(count=3, cpu=4)}, migrate=[ps_to_10])
    bounded, reasons = elastic_workers(
        proposal, view(job(roles=roles, limits=Limits(cpu=20)), nodes)
    )
    assert bounded.roles == {"worker": RoleSpec(cpu=5)}
    assert bounded.migrate == [ps_to_10]
    assert reasons[0].evidence == {"workers_planned": 3, "workers_after": 2, "workers_now": 2}
    assert reasons[0].message.endswith(
        "with none added, the workers go 8 -> 5 cores, the most that fits the job's limits "
        "beside the launches and migrations (the plan made them 4 to fit the ones given up)"
    )


def test_a_job_above_its_limit_is_brought_within_it_when_its_added_worker_is_given_up():
    # Found by the plan properties: 1 PS of 1 core and 1 worker of 8 under a limit of 8
    # (9 cores running). The plan: 2 workers of 3.5 (7 + 1 = 8) and worker-0 migrated for
    # memory at its 8 cores, which the smaller role size makes growth: the added worker
    # is given up, and the workers kept their 8 cores, 9 > 8. At any size above 3.5 the
    # move is cut (8 + 1 > 8), so they stay at 3.5, and the guard then grants the move
    # the 7 cores the limit leaves beside the PS: 1 + 7 = 8.
    roles = {"worker": RoleSpec(count=1, cpu=8), "ps": RoleSpec(count=1, cpu=1)}
    nodes = [node("worker-0", "worker", 8, 2048), node("ps-0", "ps", 1, 1024)]
    memory = NodeChange(role="worker", name="worker-0", cpu=8, memory_mib=2458)
    proposal = Proposal(roles={"worker": RoleSpec(count=2, cpu=3.5)}, migrate=[memory])
    the_job = job(roles=roles, limits=Limits(cpu=8))
    bounded, reasons = elastic_workers(proposal, view(the_job, nodes))
    assert bounded.roles == {"worker": RoleSpec(cpu=3.5)}
    assert "worker_cpu_kept" not in reasons[0].evidence
    chained = run_chain(proposal, view(the_job, nodes))
    assert chained.roles["worker"].cpu == 3.5
    assert [(m.name, m.cpu, m.memory_mib) for m in chained.migrate] == [("worker-0", 7, 2458)]
