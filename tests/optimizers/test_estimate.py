from datetime import timedelta

from brain.domain import Limits, RoleSpec, Stage
from brain.optimizing import SpeedSample
from optimizers.estimate import EstimateSettings, ResourceEstimateOptimizer
from tests.optimizers.builders import NOW, context, job, node, plan, series

# factor 1.2, growth threshold 10 %; ready after 120 s and 3 samples (these series: 3
# samples 60 s apart)
READY = {"ready_after_s": 120, "min_samples": 3}
SETTINGS = EstimateSettings(**READY)
NODES = [
    node("chief-0", "chief", cpu=4, memory_mib=8192),
    node("ps-0", "ps", cpu=8, memory_mib=8192),
    node("ps-1", "ps", cpu=8, memory_mib=8192),
]
# chief: CPU mean 2.0, memory mean 4000; each PS: CPU mean 1.0, memory a stable 2000
STABLE_SAMPLES = [
    *series("chief-0", cpu=[1.8, 2.2, 2.0], memory_mib=[3900, 4100, 4000]),
    *series("ps-0", cpu=[0.9, 1.1, 1.0], memory_mib=[2000, 2000, 2000]),
    *series("ps-1", cpu=[1.1, 0.9, 1.0], memory_mib=[2000, 2000, 2000]),
]


def speed_steps(steps):
    n = len(steps)
    return [
        SpeedSample(
            ts=NOW - timedelta(seconds=60 * (n - 1 - i)), global_step=s, steps_per_sec=10, workers=1
        )
        for i, s in enumerate(steps)
    ]


def estimate(limits, samples=STABLE_SAMPLES, speed=(), settings=SETTINGS, total_steps=None):
    the_job = job(limits=limits, total_steps=total_steps)
    ctx = context(Stage.estimate, the_job, nodes=NODES, samples=samples, speed=speed)
    return ResourceEstimateOptimizer().propose(ctx, settings)


def test_plan_cut_down_to_fit_cpu_limit():
    proposal = estimate(Limits(cpu=40), speed=speed_steps([0, 1000, 2000]))
    # training CPU 2 + 1 + 1 = 4 -> floor(40 / 4) = 10 workers; worker 2.4 cores (mean CPU
    # x 1.2), 4920 MiB (the chief's peak 4100 x 1.2: its mean would be below what it uses)
    # 10: ps ceil(2 x 10 / 8) = 3 -> CPU 4 (chief) + 9 x 2.4 + 3 x 8 = 49.6 > 40
    #  9: ps 3 -> 4 + 8 x 2.4 + 24 = 47.2 > 40
    #  8: ps ceil(16 / 8) = 2 -> 4 + 7 x 2.4 + 16 = 36.8 <= 40
    assert proposal.roles["chief"] == RoleSpec(count=1)
    assert proposal.roles["worker"] == RoleSpec(count=7, cpu=2.4, memory_mib=4920)
    # stable PS memory: 4000 in total / 2 PS x 1.2 = 2400 MiB
    assert proposal.roles["ps"] == RoleSpec(count=2, cpu=8, memory_mib=2400)
    assert any("reduced workers from 10 to 8" in r.message for r in proposal.reasons)
    assert any("stable" in r.message for r in proposal.reasons)


def test_plan_cut_down_to_fit_cpu_and_memory_limits():
    proposal = estimate(Limits(cpu=40, memory_mib=40000))
    # 8 workers fit the CPU, memory 8192 + 7 x 4920 + 2 x 2400 = 47432 > 40000
    # 7: ps ceil(14 / 8) = 2 -> 8192 + 6 x 4920 + 4800 = 42512 > 40000
    # 6: ps ceil(12 / 8) = 2 -> 8192 + 5 x 4920 + 4800 = 37592 <= 40000
    assert proposal.roles["worker"].count == 5
    assert proposal.roles["ps"].count == 2


def test_limits_too_small_for_one_worker():
    proposal = estimate(Limits(cpu=10))
    # one worker (the chief, 4 cores) needs ps ceil(2 / 8) = 1 of 8 cores -> 12 > 10
    assert proposal.is_empty
    assert "exceeds the job's limits" in proposal.reasons[0].message


def test_growing_ps_memory_sized_for_total_steps():
    samples = [
        *series("chief-0", cpu=[2, 2, 2, 2], memory_mib=[4000] * 4),
        *series("ps-0", cpu=[1, 1, 1, 1], memory_mib=[1000, 1100, 1200, 1300]),
        *series("ps-1", cpu=[1, 1, 1, 1], memory_mib=[1000, 1100, 1200, 1300]),
    ]
    speed = speed_steps([0, 1000, 2000, 3000])
    proposal = estimate(
        Limits(), samples, speed, EstimateSettings(max_workers=8, **READY), total_steps=100_000
    )
    # total PS memory = 2000 + 0.2 MiB/step; over the observed steps it grew
    # 0.2 x 3000 / 2000 = 30 % >= 10 % -> growing
    # at step 100000: 2000 + 0.2 x 100000 = 22000 MiB
    # no CPU limit: 8 workers -> ps ceil(2 x 8 / 8) = 2 -> 22000 / 2 x 1.2 = 13200 MiB each
    assert proposal.roles["ps"] == RoleSpec(count=2, cpu=8, memory_mib=13200)
    [growth] = [r for r in proposal.reasons if "grows" in r.message]
    assert growth.evidence["relative_growth"] == 0.3
    assert growth.threshold == {"growth_threshold": 0.1}
    # with a threshold above the observed 30 % the same PS counts as stable: mean 2300 total
    stable = estimate(
        Limits(), samples, speed, EstimateSettings(max_workers=8, growth_threshold=0.5, **READY)
    )
    assert stable.roles["ps"].memory_mib == 1380  # 2300 / 2 x 1.2


def test_no_samples_is_an_empty_proposal():
    chief_only = series("chief-0", cpu=[2.0], memory_mib=[4000])
    proposal = estimate(Limits(cpu=40), samples=chief_only)
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["ps_without_enough_samples"] == ["ps-0", "ps-1"]
    assert proposal.reasons[0].message.startswith("not ready")


def test_one_sample_is_not_ready_by_default():
    # It used to estimate from a single sample; the default waits 3 minutes and 6 samples.
    one = [*series("chief-0", cpu=[2.0]), *series("ps-0", cpu=[1.0]), *series("ps-1", cpu=[1.0])]
    proposal = estimate(Limits(cpu=40), samples=one, settings=EstimateSettings())
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["ready"] is False
    samples = [
        *series("chief-0", cpu=[2.0] * 7, every_s=30),
        *series("ps-0", cpu=[1.0] * 7, every_s=30),
        *series("ps-1", cpu=[1.0] * 7, every_s=30),
    ]  # 7 samples over 180 s
    assert estimate(Limits(cpu=40), samples=samples, settings=EstimateSettings()).roles


def test_a_job_without_chief_estimates_from_worker_0_and_counts_it_as_a_worker():
    nodes = [node("worker-0", "worker", 4, 8192), node("ps-0", "ps", 8, 8192)]
    samples = [*series("worker-0", cpu=[2.0] * 3), *series("ps-0", cpu=[2.0] * 3)]
    the_job = job(limits=Limits(cpu=40), roles={"ps": RoleSpec(count=1), "worker": RoleSpec(1)})
    ctx = context(Stage.estimate, the_job, nodes=nodes, samples=samples)
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    # training CPU 2 + 2 = 4 -> 10 trainers; ps ceil(2 x 10 / 8) = 3: 10 x 2.4 + 24 = 48 > 40
    # 9: 3 PS -> 45.6 > 40; 8: ceil(16 / 8) = 2 PS -> 8 x 2.4 + 16 = 35.2 <= 40
    assert "chief" not in proposal.roles
    assert proposal.roles["worker"].count == 8


def test_no_second_estimate_once_one_was_applied():
    applied = plan(stage=Stage.estimate, roles={"worker": RoleSpec(count=5)})
    the_job = job(limits=Limits(cpu=40))
    ctx = context(Stage.estimate, the_job, nodes=NODES, samples=STABLE_SAMPLES, plans=[applied])
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    # It used to re-run after the workers joined (then proposing 1 -> 5 PS of 480 MiB).
    assert proposal.is_empty and "already estimated" in proposal.reasons[0].message
