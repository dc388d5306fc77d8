import pytest

from brain.domain import Limits, Resources, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds import enforce_bounds
from tests.builders.views import job, node

NODE_MAX = Resources(cpu=16, memory_mib=65536, gpu=8)
ROLES = {
    "chief": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=5, cpu=4, memory_mib=8192),
    "ps": RoleSpec(count=2, cpu=8, memory_mib=8192),
}


def test_enforce_bounds_clamps_to_node_max_and_drops_non_positive_sizes():
    proposal = Proposal(
        roles={"ps": RoleSpec(cpu=20, memory_mib=-5, gpu=0)},
        migrate=[NodeChange(role="worker", name="worker-0", cpu=0, memory_mib=100000)],
    )
    bounded = enforce_bounds(proposal, job(roles=ROLES), [], NODE_MAX)
    # cpu 20 -> 16, memory -5 dropped (keep current), gpu 0 is a valid CPU-only size
    assert bounded.roles["ps"] == RoleSpec(cpu=16, memory_mib=None, gpu=0)
    # migrate: cpu 0 dropped, memory 100000 -> 65536
    assert bounded.migrate == [
        NodeChange(role="worker", name="worker-0", cpu=None, memory_mib=65536)
    ]
    assert {r.optimizer for r in bounded.reasons} == {"guard"}
    assert len(bounded.reasons) == 4
    # pure: the input is untouched
    assert proposal.roles["ps"].cpu == 20 and not proposal.reasons


def test_enforce_bounds_reduces_workers_to_fit_limits():
    proposal = Proposal(roles={"worker": RoleSpec(count=8)})
    bounded = enforce_bounds(proposal, job(roles=ROLES, limits=Limits(cpu=44)), [], NODE_MAX)
    # 8 workers: 4 + 8 x 4 + 2 x 8 = 52 > 44; the job's worker size 4 is used where the
    # proposal has none -> 6 workers: 4 + 24 + 16 = 44
    assert bounded.roles["worker"].count == 6
    assert "reduced workers from 8 to 6" in bounded.reasons[-1].message
    assert bounded.reasons[-1].threshold == {"cpu": 44}


def test_enforce_bounds_uses_node_sizes_when_the_job_spec_has_none():
    roles = {"chief": RoleSpec(count=1), "worker": RoleSpec(count=4)}
    nodes = [node("chief-0", "chief", 2, 4096, gpu=1), node("worker-0", "worker", 2, 4096, gpu=1)]
    bounded = enforce_bounds(Proposal(), job(roles=roles, limits=Limits(gpu=3)), nodes, NODE_MAX)
    # 1 + 4 GPUs = 5 > 3 -> 2 workers
    assert bounded.roles == {"worker": RoleSpec(count=2)}


def test_what_workers_cannot_fit_is_cut_from_the_sizes_and_said():
    bounded = enforce_bounds(
        Proposal(), job(roles=ROLES, limits=Limits(memory_mib=20000)), [], NODE_MAX
    )
    # 5 workers: 8 x 8192 = 65536 > 20000; workers go down to 1 (a role that runs is not
    # taken to 0): chief, worker and 2 PS, 4 x 8192 = 32768, then every size x 20000 /
    # 32768, rounded down to whole MiB: 5000 (4 x 5000 = 20000)
    assert bounded.roles["worker"] == RoleSpec(count=1, memory_mib=5000)
    assert bounded.roles["chief"].memory_mib == bounded.roles["ps"].memory_mib == 5000
    cut = bounded.reasons[-1]
    assert cut.message == (
        "cut memory_mib per node to fit the job's memory_mib limit 20000 MiB (32768 MiB "
        "planned): chief 8192 -> 5000, worker 8192 -> 5000, ps 8192 -> 5000"
    )
    assert not any("still exceeds" in r.message for r in bounded.reasons)


def test_a_job_registered_over_its_cpu_limit_gets_a_plan_within_it():
    # the design's example registered at 8 + 8 cores under a 15-core limit
    roles = {"chief": RoleSpec(count=1, cpu=8, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}
    bounded = enforce_bounds(Proposal(), job(roles=roles, limits=Limits(cpu=15)), [], NODE_MAX)
    # 8 x 15 / 16 = 7.5 cores each: 15
    assert (bounded.roles["chief"].cpu, bounded.roles["ps"].cpu) == (7.5, 7.5)


def test_more_gpus_than_the_limit_are_cut_to_it():
    roles = {"worker": RoleSpec(count=1, cpu=8, memory_mib=8192, gpu=4)}
    proposal = Proposal(roles={"worker": RoleSpec(gpu=5)})
    bounded = enforce_bounds(proposal, job(roles=roles, limits=Limits(gpu=4)), [], NODE_MAX)
    # the plan's growth 4 -> 5 is what goes: back to the 4 it has, so no change at all
    assert bounded.roles == {}
    assert "cut the plan's growth of gpu" in bounded.reasons[-1].message


def test_a_role_registered_above_the_largest_node_is_cut_to_it():
    roles = {"worker": RoleSpec(count=2, cpu=24, memory_mib=8192)}
    bounded = enforce_bounds(Proposal(), job(roles=roles), [], NODE_MAX)
    assert bounded.roles["worker"].cpu == 16
    assert bounded.reasons[-1].message == "cut worker to the largest node: cpu 24 -> 16"


def test_a_same_size_migration_is_kept_as_a_replacement():
    # a slow node replaced on a fresh one grows nothing: it needs no headroom, even when
    # the job is at its limit (chief 4 + 5 workers x 4 + 2 PS x 8 = 40 cores of 40)
    nodes = [node("worker-0", "worker", 4, 8192)]
    change = NodeChange(role="worker", name="worker-0", cpu=4, memory_mib=8192)
    bounded = enforce_bounds(
        Proposal(migrate=[change]), job(roles=ROLES, limits=Limits(cpu=40)), nodes, NODE_MAX
    )
    assert bounded.migrate == [change]


def test_a_plan_adding_ps_does_not_also_move_a_ps_to_more_cpu():
    nodes = [node(f"ps-{i}", "ps", cpu=8, memory_mib=8192) for i in range(2)]
    proposal = Proposal(
        roles={"ps": RoleSpec(count=3)},
        migrate=[
            NodeChange(role="ps", name="ps-0", cpu=13.4, memory_mib=8192),  # hot_ps: dropped
            NodeChange(role="ps", name="ps-1", cpu=8, memory_mib=12000),  # a memory fix: kept
        ],
    )
    plan = enforce_bounds(proposal, job(roles=ROLES), nodes, NODE_MAX)
    assert plan.roles == {"ps": RoleSpec(count=3)}
    assert plan.migrate == [NodeChange(role="ps", name="ps-1", cpu=8, memory_mib=12000)]
    assert plan.reasons[0].message == (
        "dropped the migration of ps-0 to 13.4 cores: the plan adds PS (2 -> 3), which takes "
        "load off every PS; one PS change at a time"
    )


def test_fitting_the_limits_counts_a_migrated_node_at_its_own_size():
    nodes = [
        node("chief-0", "chief", cpu=4, memory_mib=8192),
        *(node(f"worker-{i}", "worker", cpu=4, memory_mib=8192, index=i) for i in range(5)),
        node("ps-0", "ps", cpu=13.4, memory_mib=8192),  # migrated earlier from 8 cores
        node("ps-1", "ps", cpu=8, memory_mib=8192, index=1),
    ]
    proposal = Proposal(roles={"ps": RoleSpec(count=3)})
    plan = enforce_bounds(proposal, job(roles=ROLES, limits=Limits(cpu=48)), nodes, NODE_MAX)
    # 4 + 5 x 4 + (13.4 + 8 + 8) = 53.4 > 48; 4 workers 49.4; 3 workers 45.4. Counting ps-0
    # at its role's 8 cores (4 + 20 + 24 = 48) used to let the job run 5.4 cores over.
    assert plan.roles["worker"].count == 3
    assert plan.reasons[0].message == "reduced workers from 5 to 3 to fit the job's limits"


def test_a_worker_count_cut_back_to_what_runs_is_no_change():
    # ps-0 was migrated from its role's 7.3 cores to 11.4: with 2 workers of 4 the job
    # holds 8 + 11.4 = 19.4 of its 20 cores, so a third worker (23.4) does not fit,
    # although the role sizes alone (8 + 7.3 + 4 = 19.3) say it would. Back at the 2
    # workers it runs, the plan changes nothing.
    roles = {
        "ps": RoleSpec(count=1, cpu=7.3, memory_mib=4096),
        "worker": RoleSpec(count=2, cpu=4, memory_mib=4096),
    }
    nodes = [
        node("ps-0", "ps", 11.4, 4096),
        node("worker-0", "worker", 4, 4096),
        node("worker-1", "worker", 4, 4096),
    ]
    proposal = Proposal(roles={"worker": RoleSpec(count=3)})
    bounded = enforce_bounds(proposal, job(roles=roles, limits=Limits(cpu=20)), nodes, NODE_MAX)
    assert bounded.is_empty
    assert bounded.reasons[-1].message == (
        "reduced workers from 3 to 2 to fit the job's limits (the count it runs now: no change)"
    )


def test_a_ps_kept_at_its_own_size_beside_a_smaller_role_is_cut_once_to_fit():
    # ps-0 runs at 5 cores (moved there), ps-1 at the role's 4; a plan gives 4 PS 1.2
    # cores each and keeps ps-0 at its 5. Under 24.5 cores: 4 x 1.2 + 4 x 4 = 20.8 for
    # the roles, so ps-0 gets 1.2 + 3.7 = 4.9; its asked 5, the same as it runs, is not
    # added again (a node migrated twice, the last past the limit).
    roles = {
        "worker": RoleSpec(count=4, cpu=4, memory_mib=8192),
        "ps": RoleSpec(count=2, cpu=4, memory_mib=8192),
    }
    nodes = [
        node("ps-0", "ps", cpu=5, memory_mib=8192),
        node("ps-1", "ps", cpu=4, memory_mib=8192, index=1),
        *(node(f"worker-{i}", "worker", cpu=4, memory_mib=8192, index=i) for i in range(4)),
    ]
    proposal = Proposal(
        roles={"ps": RoleSpec(count=4, cpu=1.2)},
        migrate=[NodeChange(role="ps", name="ps-0", cpu=5, memory_mib=8192)],
    )
    bounded = enforce_bounds(proposal, job(roles=roles, limits=Limits(cpu=24.5)), nodes, NODE_MAX)
    assert bounded.roles == {"ps": RoleSpec(count=4, cpu=1.2)}
    [kept] = bounded.migrate
    assert (kept.name, kept.cpu, kept.memory_mib) == ("ps-0", pytest.approx(4.9), 8192)
