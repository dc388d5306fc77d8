"""Bounded steps: a site budget stands in for a missing CPU limit, and one plan moves a
role's count or size at most by max_change_factor (OOM fixes and the estimate stage's
workers excepted)."""

from brain.config import Settings
from brain.domain import Limits, Resources, RoleSpec, Stage
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.roles import effective_roles, role_totals
from tests.builders.views import job, node

NODE_MAX = Resources(cpu=64, memory_mib=512 * 1024, gpu=8)
# 1 PS + 2 workers, 12 cores, no limits
ROLES = {
    "ps": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=2, cpu=4, memory_mib=8192),
}
NODES = [
    node("ps-0", "ps", 4, 8192),
    node("worker-0", "worker", 4, 8192),
    node("worker-1", "worker", 4, 8192, index=1),
]
# What one estimate asked of such a job: 10 PS of 948 MiB and 20 workers.
LEAP = Proposal(
    roles={
        "ps": RoleSpec(count=10, cpu=2, memory_mib=948),
        "worker": RoleSpec(count=20, cpu=1.2),
    }
)


def test_one_plan_moves_a_count_or_size_at_most_by_the_factor():
    plan = enforce_bounds(LEAP, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=4)
    # counts at most x4 (1 -> 4 PS, 2 -> 8 workers), sizes at most /4 (8192 -> 2048 MiB,
    # 4 -> 1 core for the workers; the PS's 2 cores are within 4 / 4 .. 4 x 4); the 4 PS
    # share the 10 x 948 = 9480 MiB the estimate sized for 10: 2370 MiB each
    assert plan.roles["ps"] == RoleSpec(count=4, cpu=2, memory_mib=2370)
    assert plan.roles["worker"] == RoleSpec(count=8, cpu=1.2)
    [ps] = [r for r in plan.reasons if r.message.startswith("ps: one plan")]
    assert ps.message == (
        "ps: one plan changes a count or size at most 4x: count 1 -> 10 cut to 4, "
        "memory_mib 8192 -> 948 cut to 2048"
    )


def test_the_default_factor_is_stated_in_the_settings_and_bounds_the_leap():
    factor = Settings().max_change_factor
    assert factor == 8
    plan = enforce_bounds(LEAP, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=factor)
    # 8 PS share the 9480 MiB sized for 10: 1185 MiB each (the factor alone gave 1024)
    assert (plan.roles["ps"].count, plan.roles["ps"].memory_mib) == (8, 1185)
    assert plan.roles["worker"].count == 16


def test_the_estimate_stage_takes_its_measured_jump_in_workers_in_one_plan():
    plan = enforce_bounds(
        LEAP, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=8, stage=Stage.estimate
    )
    # 2 -> 20 workers of 4 -> 1.2 cores as estimated, where 8x stops at 16 (the running
    # stage's plan just below); the PS still move at most 8x: 1 -> 8 PS sharing the
    # 10 x 948 = 9480 MiB sized for 10, 1185 MiB each
    assert plan.roles["worker"] == RoleSpec(count=20, cpu=1.2)
    assert plan.roles["ps"] == RoleSpec(count=8, cpu=2, memory_mib=1185)
    assert not [r for r in plan.reasons if r.message.startswith("worker: one plan")]
    running = enforce_bounds(
        LEAP, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=8, stage=Stage.running
    )
    assert (running.roles["ps"].count, running.roles["worker"].count) == (8, 16)


def test_the_estimate_stage_still_fits_the_job_limits():
    limited = job(roles=ROLES, limits=Limits(cpu=30))
    plan = enforce_bounds(LEAP, limited, NODES, NODE_MAX, max_change_factor=8, stage=Stage.estimate)
    # 8 PS x 2 + 20 x 1.2 = 40 > 30: workers go, (30 - 16) / 1.2 = 11.7 -> 11 (29.2 cores)
    assert plan.roles["ps"].count == 8
    assert plan.roles["worker"].count == 11


def test_an_oom_fix_grows_memory_as_far_as_it_must():
    fix = Proposal(roles={"ps": RoleSpec(memory_mib=16 * 8192)}, source_event_id=7)
    plan = enforce_bounds(fix, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=4)
    assert plan.roles["ps"].memory_mib == 16 * 8192


def test_without_a_cpu_limit_the_site_budget_bounds_the_plan():
    plan = enforce_bounds(
        LEAP, job(roles=ROLES), NODES, NODE_MAX, default_job_cpu=16, max_change_factor=None
    )
    # 10 PS x 2 + 20 x 1.2 = 44 > 16: workers go down to the last one that trains (21.2),
    # then every size x 16 / 21.2: PS 1.5 and worker 0.9 cores, 10 x 1.5 + 0.9 = 15.9
    assert (plan.roles["ps"].count, plan.roles["ps"].cpu) == (10, 1.5)
    assert (plan.roles["worker"].count, plan.roles["worker"].cpu) == (1, 0.9)
    totals = role_totals(effective_roles(plan.roles, job(roles=ROLES), NODES))
    assert totals.cpu == 15.9
    assert "the site's budget of 16 cores per job" in plan.reasons[0].message


def test_a_migration_moves_a_node_size_at_most_by_the_factor():
    # worker-0 has 8192 MiB and 4 cores: at x4 a migration to 1000 MiB stops at 2048,
    # and 40 cores at 16; an OOM fix migrating it is not bounded.
    shrink = Proposal(migrate=[NodeChange(role="worker", name="worker-0", cpu=40, memory_mib=1000)])
    plan = enforce_bounds(shrink, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=4)
    assert [(c.cpu, c.memory_mib) for c in plan.migrate] == [(16, 2048)]
    assert plan.reasons[-1].message == (
        "migrate worker-0: one plan changes a node's size at most 4x: cpu 4 -> 40 cut to 16, "
        "memory_mib 8192 -> 1000 cut to 2048"
    )
    fix = Proposal(
        migrate=[NodeChange(role="worker", name="worker-0", memory_mib=65536)], source_event_id=3
    )
    plan = enforce_bounds(fix, job(roles=ROLES), NODES, NODE_MAX, max_change_factor=4)
    assert plan.migrate[0].memory_mib == 65536
