"""A PS tier cut to fewer nodes than its memory was sized for keeps its total: each PS
is sized for its larger share."""

from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.bounds.shard_memory import shard_memory
from brain.optimizing.proposal import NodeChange
from tests.builders.bounds import NODE_MAX, view
from tests.builders.views import job, node

ROLES = {
    "ps": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=2, cpu=4, memory_mib=8192),
}


def test_a_ps_count_cut_by_max_count_shares_the_sized_total_over_the_ps_left():
    # The estimate: 13 PS of 3000 MiB (39000 MiB for the tier); max_count 8 keeps 8 PS,
    # each holding 1/8 of the model: 39000 / 8 = 4875 MiB, the same headroom.
    estimate = Proposal(roles={"ps": RoleSpec(count=13, cpu=2, memory_mib=3000)})
    bounded = enforce_bounds(
        estimate, job(roles=ROLES, bounds={"ps": RoleBounds(max_count=8)}), [], NODE_MAX
    )
    assert bounded.roles["ps"] == RoleSpec(count=8, cpu=2, memory_mib=4875)
    assert bounded.reasons[-1].message == (
        "ps: memory sized for 13 nodes (39000 MiB in total), the plan runs 8: each holds a "
        "larger share, 3000 MiB -> 4875 MiB per node"
    )


def test_a_ps_count_cut_by_the_change_factor_shares_the_total_too():
    # 1 PS now, factor 4: at most 4 PS of the 10 planned; 10 x 2500 = 25000 / 4 = 6250.
    estimate = Proposal(roles={"ps": RoleSpec(count=10, memory_mib=2500)})
    bounded = enforce_bounds(estimate, job(roles=ROLES), [], NODE_MAX, max_change_factor=4)
    assert bounded.roles["ps"] == RoleSpec(count=4, memory_mib=6250)


def test_fewer_ps_without_a_memory_size_hold_what_the_tier_holds_now():
    # 4 PS of 6000 MiB run (24000 MiB); a plan for 3 PS that leaves memory alone would
    # give each a quarter more to hold: 24000 / 3 = 8000 MiB.
    nodes = [node(f"ps-{i}", "ps", 4, 6000, index=i) for i in range(4)]
    roles = ROLES | {"ps": RoleSpec(count=4, cpu=4)}
    bounded, reasons = shard_memory(
        Proposal(roles={"ps": RoleSpec(count=3)}),
        view(job(roles=roles), nodes, proposed=Proposal(roles={"ps": RoleSpec(count=3)})),
    )
    assert bounded.roles == {"ps": RoleSpec(count=3, memory_mib=8000)}
    assert reasons[0].evidence["total_memory_mib"] == 24000


def test_more_ps_or_a_count_kept_change_no_memory():
    grown = Proposal(roles={"ps": RoleSpec(count=3)})
    assert shard_memory(grown, view(job(roles=ROLES), proposed=grown)) == (grown, [])
    sized = Proposal(roles={"ps": RoleSpec(count=6, memory_mib=2000)})
    # 6 x 2000 planned, 6 kept: each holds what it was sized for
    assert shard_memory(sized, view(job(roles=ROLES), proposed=sized)) == (sized, [])


def test_workers_hold_a_whole_replica_whatever_the_count():
    proposal = Proposal(roles={"worker": RoleSpec(count=12, memory_mib=4000)})
    the_job = job(roles=ROLES, bounds={"worker": RoleBounds(max_count=6)})
    bounded = enforce_bounds(proposal, the_job, [], NODE_MAX)
    assert bounded.roles["worker"] == RoleSpec(count=6, memory_mib=4000)


def test_the_resharded_total_still_fits_the_memory_limit():
    # 13 x 3000 = 39000 resharded over 8 PS: 4875 each, 39000 for the tier; with the 2
    # workers' 2 x 8192 (min_count 2: none to give up) the job needs 55384 MiB over a
    # 50000 limit: the guard cuts every size by 50000 / 55384, rounded down, and says so
    # (the limit is hard): PS 4401, workers 7395 MiB (8 x 4401 + 2 x 7395 = 49998).
    estimate = Proposal(roles={"ps": RoleSpec(count=13, memory_mib=3000)})
    bounds = {"ps": RoleBounds(max_count=8), "worker": RoleBounds(min_count=2)}
    the_job = job(roles=ROLES, bounds=bounds, limits=Limits(memory_mib=50000))
    bounded = enforce_bounds(estimate, the_job, [], NODE_MAX)
    assert bounded.roles == {
        "ps": RoleSpec(count=8, memory_mib=4401),
        "worker": RoleSpec(memory_mib=7395),
    }
    assert bounded.reasons[-1].message.startswith(
        "cut memory_mib per node to fit the job's memory_mib limit 50000 MiB"
    )


def test_a_ps_above_the_role_cpu_keeps_its_cores_when_the_role_memory_grows():
    # 4 PS of 6000 MiB (24000 MiB); the role has 1 core, ps-1 was migrated to 3.1. A plan
    # for 3 PS: each holds 24000 / 3 = 8000 MiB, a role change that relaunches every PS at
    # the role's 1 core; ps-1 is migrated to its own 3.1 cores and the 8000 MiB share, the
    # others take the role's size. ps-3 goes. CPU 1 + 3.1 + 1 + 2 x 4 = 13.1 <= 14, memory
    # 3 x 8000 + 2 x 8192 = 40384 <= 50000: it fits the limits as it is.
    nodes = [node(f"ps-{i}", "ps", 3.1 if i == 1 else 1, 6000, index=i) for i in range(4)]
    roles = ROLES | {"ps": RoleSpec(count=4, cpu=1, memory_mib=6000)}
    the_job = job(roles=roles, limits=Limits(cpu=14, memory_mib=50000))
    bounded = enforce_bounds(Proposal(roles={"ps": RoleSpec(count=3)}), the_job, nodes, NODE_MAX)
    assert bounded.roles == {"ps": RoleSpec(count=3, memory_mib=8000)}
    assert bounded.migrate == [NodeChange(role="ps", name="ps-1", cpu=3.1, memory_mib=8000)]
    assert [c.name for c in bounded.remove] == ["ps-3"]
    assert (
        "keeps ps-1 at 3.1 cores: the ps role's new memory relaunches every ps at the role's "
        "1 cores and 8000 MiB, so ps-1 (now 3.1 cores, 6000 MiB) is migrated to 3.1 cores and "
        "8000 MiB"
    ) in [r.message for r in bounded.reasons]


def test_a_migration_in_the_plan_gets_at_least_the_share():
    # The same cut with hot_ps moving ps-0 to 2.5 cores at its 6000 MiB: the role's
    # 8000 MiB relaunch comes first, so the migration carries max(6000, 8000) = 8000 MiB.
    nodes = [node(f"ps-{i}", "ps", 1, 6000, index=i) for i in range(4)]
    roles = ROLES | {"ps": RoleSpec(count=4, cpu=1, memory_mib=6000)}
    move = NodeChange(role="ps", name="ps-0", cpu=2.5, memory_mib=6000)
    proposal = Proposal(roles={"ps": RoleSpec(count=3)}, migrate=[move])
    bounded, _ = shard_memory(proposal, view(job(roles=roles), nodes, proposed=proposal))
    assert bounded.migrate == [NodeChange(role="ps", name="ps-0", cpu=2.5, memory_mib=8000)]


def test_a_role_cpu_the_plan_changes_relaunches_every_ps_at_it():
    # ps_scaling sets 2 cores per PS: the plan means every PS to run at 2, ps-1 too.
    nodes = [node(f"ps-{i}", "ps", 3.1 if i == 1 else 1, 6000, index=i) for i in range(4)]
    roles = ROLES | {"ps": RoleSpec(count=4, cpu=1, memory_mib=6000)}
    proposal = Proposal(roles={"ps": RoleSpec(count=3, cpu=2)})
    bounded, _ = shard_memory(proposal, view(job(roles=roles), nodes, proposed=proposal))
    assert bounded.roles == {"ps": RoleSpec(count=3, cpu=2, memory_mib=8000)}
    assert bounded.migrate == []


def test_the_kept_cores_still_fit_the_cpu_limit():
    # The same cut under a 13-core limit: the role's new memory relaunches the 3 PS left
    # at 1 core, 3 + 2 x 4 = 11 cores, 2 left of the limit; ps-1's migration from the
    # role's 1 core to its 3.1 needs 2.1 more: it gets 1 + 2 = 3 cores, and a reason.
    nodes = [node(f"ps-{i}", "ps", 3.1 if i == 1 else 1, 6000, index=i) for i in range(4)]
    roles = ROLES | {"ps": RoleSpec(count=4, cpu=1, memory_mib=6000)}
    the_job = job(roles=roles, limits=Limits(cpu=13, memory_mib=50000))
    bounded = enforce_bounds(Proposal(roles={"ps": RoleSpec(count=3)}), the_job, nodes, NODE_MAX)
    assert bounded.migrate == [NodeChange(role="ps", name="ps-1", cpu=3, memory_mib=8000)]
    assert (
        "migrate ps-1: cpu 1 -> 3.1 would exceed the job's cpu limit 13 (11 requested): granted 3"
    ) in [r.message for r in bounded.reasons]
