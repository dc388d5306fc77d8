"""A PS tier cut to fewer nodes than its memory was sized for keeps its total: each PS
is sized for its larger share."""

from brain.domain import Limits, RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.bounds.shard_memory import shard_memory
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
