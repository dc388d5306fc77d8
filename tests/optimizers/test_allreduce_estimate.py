"""The estimate of an all-reduce job: workers sized from their use, as many as the limits hold."""

from brain.domain import Limits, RoleBounds, RoleSpec, Stage, Strategy
from optimizers.estimate import EstimateSettings, ResourceEstimateOptimizer
from tests.builders.views import context, job, node, plan, series

# factor 1.2, CPU-bound at 0.9 of the request; ready after 120 s and 3 samples (these
# series: 3 samples 60 s apart)
SETTINGS = EstimateSettings(ready_after_s=120, min_samples=3)
WORKERS = [node(f"w-{i}", "worker", cpu=8, memory_mib=32768, gpu=1, index=i) for i in range(2)]
# mean 4.5 cores each: 56 % of 8, not CPU-bound
USE = [*series("w-0", cpu=[4.4, 4.6, 4.5]), *series("w-1", cpu=[4.5, 4.5, 4.5])]


def estimate(
    limits=None,
    samples=USE,
    nodes=WORKERS,
    roles=None,
    bounds=None,
    plans=(),
    settings=SETTINGS,
):
    the_job = job(
        strategy=Strategy.allreduce,
        roles=roles or {"worker": RoleSpec(count=2, cpu=8, memory_mib=32768, gpu=1)},
        limits=limits,
        bounds=bounds,
    )
    ctx = context(Stage.estimate, the_job, nodes=nodes, samples=samples, plans=plans)
    return ResourceEstimateOptimizer().propose(ctx, settings)


def test_workers_sized_to_their_use_fill_the_limits():
    # 4.5 cores each, limited to 4.5 x 1.2 = 5.4; floor(48 / 4.5) = 10 by CPU, 8 / 1 = 8
    # by GPU: 8 workers, 36 cores
    proposal = estimate(Limits(cpu=48, gpu=8))
    assert proposal.roles == {"worker": RoleSpec(count=8, cpu=4.5, cpu_limit=5.4)}
    why = proposal.reasons[0]
    assert why.evidence["worker_cpu_used"] == 4.5
    assert why.evidence["cpu_bound"] is False
    assert "8 workers of 4.5 cores" in why.message


def test_cpu_bound_workers_get_the_margin():
    # 3.8 of 4 cores (>= 0.9 x 4 = 3.6): 3.8 x 1.2 = 4.56 -> 4.6 cores, no CPU limit;
    # floor(20 / 4.6) = 4 workers, 18.4 cores
    nodes = [node(f"w-{i}", "worker", cpu=4, memory_mib=32768, gpu=1, index=i) for i in range(2)]
    bound = [*series("w-0", cpu=[3.8] * 3), *series("w-1", cpu=[3.7, 3.8, 3.9])]
    proposal = estimate(Limits(cpu=20), samples=bound, nodes=nodes)
    assert proposal.roles == {"worker": RoleSpec(count=4, cpu=4.6)}
    assert "CPU-bound" in proposal.reasons[0].message


def test_memory_limit_and_max_count_bound_the_count():
    # 32768 MiB each as requested: floor(100000 / 32768) = 3
    assert estimate(Limits(cpu=48, memory_mib=100000)).roles["worker"].count == 3
    capped = estimate(Limits(cpu=48), bounds={"worker": RoleBounds(max_count=5)})
    assert capped.roles["worker"].count == 5


def test_other_roles_count_against_the_limit():
    # a 6-core chief beside the workers: floor((30 - 6) / 4.5) = 5
    chief = node("chief-0", "chief", cpu=6, memory_mib=8192)
    roles = {
        "chief": RoleSpec(count=1, cpu=6, memory_mib=8192),
        "worker": RoleSpec(count=2, cpu=8, memory_mib=32768, gpu=1),
    }
    proposal = estimate(Limits(cpu=30), nodes=[chief, *WORKERS], roles=roles)
    assert proposal.roles["worker"].count == 5


def test_without_a_limit_at_most_max_workers():
    proposal = estimate(settings=EstimateSettings(ready_after_s=120, min_samples=3, max_workers=16))
    assert proposal.roles["worker"].count == 16
    assert "no limit: at most 16" in proposal.reasons[0].message


def test_not_ready_until_every_worker_has_its_samples():
    proposal = estimate(Limits(cpu=48), samples=[*series("w-0", cpu=[4.5] * 3)])
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["ready"] is False
    assert proposal.reasons[0].evidence["workers_without_enough_samples"] == ["w-1"]
    # 2 samples 60 s apart: 60 s observed < 120 s
    early = [*series("w-0", cpu=[4.5] * 2), *series("w-1", cpu=[4.5] * 2)]
    waiting = estimate(
        Limits(cpu=48), samples=early, settings=EstimateSettings(ready_after_s=120, min_samples=2)
    )
    assert waiting.is_empty
    assert "60 s of training observed" in waiting.reasons[0].message


def test_once_applied_it_proposes_nothing():
    done = plan(roles={"worker": RoleSpec(count=8)}, stage=Stage.estimate)
    proposal = estimate(Limits(cpu=48), plans=[done])
    assert proposal.is_empty
    assert "already estimated" in proposal.reasons[0].message
