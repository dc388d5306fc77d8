"""Plans a cluster accepts, over generated jobs and proposals: whatever the optimizers
asked and whichever bounds cut it, the bounded plan has no CPU limit below its request,
no count of 0, memory per PS at least its share of the total the PS tier was sized for
(unless the guard states it cut memory to fit a limit or the largest node), and stays
within the job's limits."""

from __future__ import annotations

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from brain.domain import ROLE_PS, ROLE_WORKER, Limits, Resources, RoleBounds, RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.bounds.shard_memory import sized_total
from brain.optimizing.roles import EPSILON, SIZE_FIELDS, effective_roles, node_level_totals
from tests.builders.views import job, node

NODE_MAX = Resources(cpu=32, memory_mib=131072, gpu=8)
PROPERTY = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def cases(draw):
    ps_count = draw(st.integers(1, 6))
    workers = draw(st.integers(1, 12))
    worker_cpu = draw(st.sampled_from([1.0, 2.0, 4.0, 8.0]))
    roles = {
        ROLE_PS: RoleSpec(
            count=ps_count,
            cpu=draw(st.sampled_from([2.0, 4.0, 8.0])),
            memory_mib=draw(st.sampled_from([2048.0, 8192.0, 16384.0])),
        ),
        ROLE_WORKER: RoleSpec(
            count=workers,
            cpu=worker_cpu,
            memory_mib=draw(st.sampled_from([4096.0, 8192.0])),
            cpu_limit=draw(st.one_of(st.none(), st.just(worker_cpu * 1.2))),
        ),
    }
    bounds = {}
    if draw(st.booleans()):
        bounds[ROLE_PS] = RoleBounds(max_count=draw(st.integers(ps_count, 10)))
    if draw(st.booleans()):
        bounds[ROLE_WORKER] = RoleBounds(
            draw(st.integers(0, workers)), draw(st.integers(workers, 24))
        )
    limits = Limits(
        cpu=draw(st.one_of(st.none(), st.floats(16, 256))),
        memory_mib=draw(st.one_of(st.none(), st.floats(64 * 1024, 1024 * 1024))),
    )
    the_job = job(roles=roles, bounds=bounds, limits=limits)
    nodes = [
        node(f"{role}-{i}", role, spec.cpu, spec.memory_mib, index=i)
        for role, spec in roles.items()
        for i in range(spec.count)
    ]
    # What an estimate or a running stage may ask: a PS tier of any count, sized for it
    # or left alone; workers of any count and CPU, a CPU limit or not.
    asked_ps = RoleSpec(
        count=draw(st.one_of(st.none(), st.integers(1, 16))),
        memory_mib=draw(st.one_of(st.none(), st.floats(512, 65536).map(round))),
    )
    asked_worker = RoleSpec(
        count=draw(st.one_of(st.none(), st.integers(1, 64))),
        cpu=draw(st.one_of(st.none(), st.floats(0.5, 24).map(lambda c: round(c, 2)))),
        cpu_limit=draw(st.one_of(st.none(), st.floats(0.5, 24).map(lambda c: round(c, 2)))),
    )
    proposed = {
        r: s for r, s in ((ROLE_PS, asked_ps), (ROLE_WORKER, asked_worker)) if s != RoleSpec()
    }
    factor = draw(st.sampled_from([None, 4.0, 8.0]))
    return the_job, nodes, Proposal(roles=proposed), factor


def guard_cut_memory(plan) -> bool:
    """The guard said it cut memory: to fit a limit, the largest node or the step bound."""
    return any(
        r.optimizer == "guard"
        and "memory_mib" in r.message
        and ("cut" in r.message or "capped" in r.message)
        for r in plan.reasons
    )


@PROPERTY
@given(cases())
def test_bounded_plans_are_plans_a_cluster_accepts(case):
    the_job, nodes, proposal, factor = case
    plan = enforce_bounds(proposal, the_job, nodes, NODE_MAX, max_change_factor=factor)
    note(f"plan {plan}")
    final = effective_roles(plan.roles, the_job, nodes)
    for role, planned in plan.roles.items():
        spec = final[role]
        # Kubernetes rejects a pod whose CPU limit is below its request
        assert spec.cpu_limit is None or spec.cpu_limit >= spec.cpu - EPSILON, (role, spec)
        # a group of 0 nodes would make a master kill the role
        assert planned.count != 0, (role, planned)
    # each PS holds its share of what the tier was sized for
    sized = sized_total(ROLE_PS, proposal.roles.get(ROLE_PS), the_job, nodes)
    if sized is not None and not guard_cut_memory(plan):
        ps = final[ROLE_PS]
        assert ps.memory_mib * ps.count >= sized[0] - ps.count, (sized, ps, plan.reasons)
    # the job's limits are hard
    totals = node_level_totals(plan.roles, the_job, nodes)
    for f in SIZE_FIELDS:
        limit = getattr(the_job.limits, f)
        assert limit is None or totals[f] <= limit + 1e-6, (f, totals, plan.reasons)
