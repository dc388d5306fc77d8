from datetime import timedelta

import pytest

from brain.domain import Limits, RoleSpec, Stage
from brain.optimizing import SpeedSample
from optimizers.estimate import EstimateSettings, ResourceEstimateOptimizer
from tests.builders.views import NOW, context, job, node, plan, series

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
    # One worker trains (the speed samples say so): training CPU 2 + (1 + 1) / 1 = 4 ->
    # floor(40 / 4) = 10 workers. Neither the chief (2 of 4 cores) nor a PS (1 of 8) is
    # CPU-bound: workers are requested the chief's mean 2.0 cores, limited to 2 x 1.2 =
    # 2.4; 4920 MiB (the chief's peak 4100 x 1.2: its mean would be below what it uses).
    # PS: 2 cores of load per worker, in PS of at most their 8-core request, each its share:
    # The chief trains like a worker and is sized like one:
    # 10: 20 cores -> 3 PS of 6.7 -> CPU 10 x 2 + 3 x 6.7 = 40.1 > 40
    #  9: 18 cores -> 3 PS of 6.0 -> 9 x 2 + 18 = 36 <= 40
    assert proposal.roles["chief"] == RoleSpec(count=1, cpu=2.0, memory_mib=4920, cpu_limit=2.4)
    assert proposal.roles["worker"] == RoleSpec(count=8, cpu=2.0, memory_mib=4920, cpu_limit=2.4)
    # stable PS memory: 4000 in total over 3 PS is 1333 MiB, but each PS held 2000 (its
    # own part besides its shard, which more PS do not shrink): 2000 x 1.2 = 2400 MiB
    assert proposal.roles["ps"] == RoleSpec(count=3, cpu=6.0, memory_mib=2400)
    assert any("reduced workers from 10 to 9" in r.message for r in proposal.reasons)
    assert any("stable" in r.message for r in proposal.reasons)
    [why] = [r for r in proposal.reasons if "training worker" in r.message]
    assert (why.evidence["workers_training"], why.evidence["ps_cpu_per_worker"]) == (1, 2.0)
    assert why.evidence["chief_cpu_bound"] is False and why.evidence["ps_cpu_bound"] is False


def test_busy_ps_keep_their_request_and_the_trainer_its_margin():
    # Each PS uses 7.5 of its 8 cores (>= 0.9 x 8 = 7.2: busy): the chief's 2 cores are
    # what busy PS let it use, so workers get the margin, 2 x 1.2 = 2.4, and the PS keep
    # their 8 cores.
    busy = [
        *series("chief-0", cpu=[1.8, 2.2, 2.0], memory_mib=[3900, 4100, 4000]),
        *series("ps-0", cpu=[7.5] * 3, memory_mib=[2000] * 3),
        *series("ps-1", cpu=[7.5] * 3, memory_mib=[2000] * 3),
    ]
    proposal = estimate(Limits(cpu=100), samples=busy)
    # training CPU 2 + 15 = 17 -> 5 workers; PS 15 x 5 = 75 cores -> 10 PS of 8:
    # 4 + 4 x 2.4 + 80 = 93.6 <= 100
    assert proposal.roles["worker"] == RoleSpec(count=4, cpu=2.4, memory_mib=4920)
    # 10 PS, each at least the 2000 MiB one PS holds now: x 1.2 = 2400 (a share of
    # 4000 / 10 x 1.2 = 480 MiB would leave a PS's own overhead out)
    assert proposal.roles["ps"] == RoleSpec(count=10, cpu=8, memory_mib=2400)
    assert "held back by busy PS" in proposal.reasons[0].message


def test_a_cpu_bound_chief_keeps_the_margin():
    bound = [
        *series("chief-0", cpu=[3.7, 3.8, 3.9], memory_mib=[3900, 4100, 4000]),
        *STABLE_SAMPLES[3:],
    ]
    proposal = estimate(Limits(cpu=40), samples=bound)
    # 3.8 of 4 cores (>= 3.6): 3.8 x 1.2 = 4.56 -> 4.6 cores, no separate limit.
    # training CPU 3.8 + 2 = 5.8 -> 6 workers; PS 12 cores -> 2 PS of 6.0:
    # 4 + 5 x 4.6 + 12 = 39 <= 40
    assert proposal.roles["worker"] == RoleSpec(count=5, cpu=4.6, memory_mib=4920)
    assert proposal.roles["ps"].cpu == 6.0
    assert "CPU-bound" in proposal.reasons[0].message


def test_ps_load_is_shared_by_the_workers_training():
    # 4 workers trained while the PS used 2 cores in all: 0.5 core of PS per worker.
    four = [
        SpeedSample(
            ts=NOW - timedelta(seconds=60 * (2 - i)),
            global_step=100 * i,
            steps_per_sec=40,
            workers=4,
        )
        for i in range(3)
    ]
    proposal = estimate(Limits(cpu=40), speed=four)
    # training CPU 2 + 0.5 = 2.5 -> 16 trainers (the chief and 15 workers, 2 cores each);
    # PS 16 x 0.5 = 8 cores -> 1 PS of 8: 16 x 2 + 8 = 40 <= 40
    assert proposal.roles["worker"].count == 15
    # 4000 MiB of PS memory in one PS, x 1.2
    assert proposal.roles["ps"] == RoleSpec(count=1, cpu=8.0, memory_mib=4800)
    why = proposal.reasons[0]
    assert (why.evidence["workers_training"], why.evidence["ps_cpu_per_worker"]) == (4, 0.5)


def test_plan_cut_down_to_fit_cpu_and_memory_limits():
    proposal = estimate(Limits(cpu=40, memory_mib=40000))
    # 9 trainers fit the CPU, memory 9 x 4920 + 3 x 2400 = 51480 > 40000
    # 8: 2 PS -> 8 x 4920 + 2 x 2400 = 44160 > 40000
    # 7: 2 PS -> 7 x 4920 + 4800 = 39240 <= 40000: the chief and 6 workers
    assert proposal.roles["worker"].count == 6
    assert proposal.roles["ps"].count == 2


def test_limits_too_small_for_one_worker():
    proposal = estimate(Limits(cpu=3))
    # one trainer (the chief, sized 2 cores) and 1 PS for its 2 cores of PS load -> 4 > 3
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
    # total PS memory = 2000 + 0.2 MiB/step (exactly: standard error 0); over the observed
    # steps it grew 0.2 x 3000 / 2000 = 30 % >= 2 % -> growing
    # at step 100000: 2000 + 0.2 x 100000 = 22000 MiB
    # no CPU limit: 8 workers -> 2 x 8 = 16 cores of PS load -> 2 PS of 8.0 cores;
    # 22000 / 2 = 11000 MiB each, but each PS peaked at 1300 and grows by half the
    # 22000 - 2300 (the mean total now) = 19700 MiB sized for: 1300 + 9850 = 11150,
    # x 1.2 = 13380 MiB each
    assert proposal.roles["ps"] == RoleSpec(count=2, cpu=8, memory_mib=13380)
    [growth] = [r for r in proposal.reasons if "grows" in r.message]
    assert growth.evidence["relative_growth"] == 0.3
    assert growth.threshold == {"growth_threshold": 0.02}
    assert "the end of training (9.6x today's 2300 MiB)" in growth.message
    # with a threshold above the observed 30 % the same PS counts as stable: mean 2300 total
    stable = estimate(
        Limits(), samples, speed, EstimateSettings(max_workers=8, growth_threshold=0.5, **READY)
    )
    assert stable.roles["ps"].memory_mib == 1560  # a PS's peak 1300 (> 2300 / 2) x 1.2


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
    # training CPU 2 + 2 = 4 -> 10 trainers of 2.0 cores; PS 20 cores -> 3 PS of 6.7:
    # 20 + 20.1 = 40.1 > 40; 9: 18 cores -> 3 PS of 6.0: 18 + 18 = 36 <= 40
    assert "chief" not in proposal.roles
    assert proposal.roles["worker"].count == 9


def test_no_second_estimate_once_one_was_applied():
    applied = plan(stage=Stage.estimate, roles={"worker": RoleSpec(count=5)})
    the_job = job(limits=Limits(cpu=40))
    ctx = context(Stage.estimate, the_job, nodes=NODES, samples=STABLE_SAMPLES, plans=[applied])
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    # It used to re-run after the workers joined (then proposing 1 -> 5 PS of 480 MiB).
    assert proposal.is_empty and "already estimated" in proposal.reasons[0].message


def test_a_job_registered_as_chief_and_ps_gains_workers():
    # The design's start: a PS job registered with a chief and PS only. Its estimate's
    # workers reach the plan (DLRover has the worker replica type in every PS job); an
    # unrelated role still does not.
    from brain.config import Settings
    from brain.optimizing import Proposal, load_registry
    from brain.optimizing.bounds import enforce_bounds
    from brain.optimizing.pipeline import run_stage

    roles = {"chief": RoleSpec(count=1, cpu=4, memory_mib=8192), "ps": RoleSpec(count=2, cpu=8)}
    the_job = job(limits=Limits(cpu=40), roles=roles)
    ctx = context(
        Stage.estimate,
        the_job,
        nodes=NODES,
        samples=STABLE_SAMPLES,
        speed=speed_steps([0, 1000, 2000]),
    )
    settings = Settings(optimizer_settings={"estimate": READY})
    plan = run_stage(load_registry(), Stage.estimate, ctx, settings).proposal
    # as in test_plan_cut_down_to_fit_cpu_limit: 9 trainers, the chief and 8 workers
    assert plan.roles["worker"].count == 8
    assert not any("no such role" in r.message for r in plan.reasons)
    stray = Proposal(roles={"evaluator": RoleSpec(count=1), "worker": RoleSpec(count=0)})
    bounded = enforce_bounds(stray, the_job, NODES, ctx.node_max)
    assert bounded.roles == {}
    assert any("dropped evaluator" in r.message for r in bounded.reasons)


def test_most_of_one_more_trainer_is_added_with_the_ps_taking_what_is_left():
    # The design's example: 15 cores, a trainer using 4.0 and PS 1.21 per trainer:
    # 15 / 5.21 = 2.88 trainers. 0.88 >= round_up_from 0.75, and 3 trainers of 4 cores
    # leave the PS 3.0 cores, at least 0.8 of their linear 3 x 1.21 = 3.63: 3 trainers,
    # the PS at 3.0 (it was 2 trainers, 4.5 of the 15 cores unused).
    nodes = [node("worker-0", "worker", cpu=8, memory_mib=8192), node("ps-0", "ps", 8, 8192)]
    samples = [
        *series("worker-0", cpu=[4.0, 4.0, 4.0], memory_mib=[3000] * 3),
        *series("ps-0", cpu=[1.21, 1.21, 1.21], memory_mib=[1500] * 3),
    ]
    the_job = job(limits=Limits(cpu=15))
    ctx = context(Stage.estimate, the_job, nodes=nodes, samples=samples)
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles["worker"].count == 3
    assert (proposal.roles["ps"].count, proposal.roles["ps"].cpu) == (1, 3.0)
    no_squeeze = EstimateSettings(**READY, round_up_from=1.0)
    assert ResourceEstimateOptimizer().propose(ctx, no_squeeze).roles["worker"].count == 2


def test_slowly_growing_ps_memory_is_sized_for_the_end_of_training():
    # 6 % in the observed minutes, total_steps 10^6: the design's memRate x totalStep.
    samples = [
        *series("chief-0", cpu=[2, 2, 2, 2], memory_mib=[4000] * 4),
        *series("ps-0", cpu=[1, 1, 1, 1], memory_mib=[1000, 1020, 1040, 1060]),
        *series("ps-1", cpu=[1, 1, 1, 1], memory_mib=[1000, 1020, 1040, 1060]),
    ]
    speed = speed_steps([0, 1000, 2000, 3000])
    settings = EstimateSettings(max_workers=8, **READY)
    proposal = estimate(Limits(), samples, speed, settings, total_steps=1_000_000)
    # 2000 + 0.04 MiB/step: 6 % over 3000 steps (it counted as stable below 10 %); at step
    # 10^6: 2000 + 0.04 x 10^6 = 42000 MiB over 2 PS, 21000 each; each PS peaked at 1060
    # and takes half the growth from today's mean total 2060: 1060 + 39940 / 2 = 21030,
    # x 1.2 = 25236 MiB each
    assert proposal.roles["ps"].memory_mib == 25236
    # without total_steps: an hour ahead at 10 steps/s, 36000 steps past step 3000:
    # 2000 + 0.04 x 39000 = 3560 MiB; 1060 + (3560 - 2060) / 2 = 1810 (> 3560 / 2),
    # x 1.2 = 2172 MiB each
    ahead = estimate(Limits(), samples, speed, settings)
    assert ahead.roles["ps"].memory_mib == 2172
    [why] = [r for r in ahead.reasons if "grows" in r.message]
    assert "3600 s ahead (36000 steps)" in why.message


def test_workers_get_the_memory_any_trainer_held():
    # A worker that already runs peaked at 6000 MiB, the chief at 4100: workers (and the
    # chief, sized like one) get 6000 x 1.2 = 7200 MiB, not 4100 x 1.2 = 4920.
    worker = node("worker-0", "worker", cpu=4, memory_mib=8192)
    samples = [*STABLE_SAMPLES, *series("worker-0", cpu=[2.0] * 3, memory_mib=[5800, 6000, 5900])]
    the_job = job(limits=Limits(cpu=40))
    ctx = context(
        Stage.estimate,
        the_job,
        nodes=[*NODES, worker],
        samples=samples,
        speed=speed_steps([0, 1000, 2000]),
    )
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    assert proposal.roles["worker"].memory_mib == 7200
    assert proposal.roles["chief"].memory_mib == 7200
    assert proposal.reasons[0].evidence["trainer_memory_peak_mib"] == 6000


def test_more_ps_each_keep_what_one_ps_holds():
    # One PS holds 3000 MiB: its own 2000 (runtime, buffers) and a 1000 MiB model. The
    # estimate splits the tier over 4 PS; each then needs 2000 + 1000 / 4 = 2250 MiB,
    # and a share of the total, 3000 / 4 x 1.2 = 900 MiB, was OOM-killed at start. The
    # job cannot tell the overhead from one PS count, so each PS keeps what the one held:
    # 3000 x 1.2 = 3600 MiB.
    nodes = [node("worker-0", "worker", cpu=2, memory_mib=4096), node("ps-0", "ps", 2, 4096)]
    samples = [
        *series("worker-0", cpu=[2.0] * 3, memory_mib=[1000] * 3),
        *series("ps-0", cpu=[1.8] * 3, memory_mib=[3000] * 3),
    ]
    the_job = job(limits=Limits(cpu=20))
    ctx = context(Stage.estimate, the_job, nodes=nodes, samples=samples)
    proposal = ResourceEstimateOptimizer().propose(ctx, SETTINGS)
    # the PS is CPU-bound (1.8 of 2 cores): training CPU 2 + 1.8 = 3.8 -> 5 trainers of
    # 2.4 cores, PS 5 x 1.8 = 9 cores in PS of their 2-core request: 5 PS; 12 + 10 = 22 >
    # 20 -> 4 trainers, 7.2 cores of PS load: 4 PS of 2 cores (9.6 + 8 = 17.6 <= 20)
    assert proposal.roles["ps"] == RoleSpec(count=4, cpu=2, memory_mib=3600)
    why = proposal.reasons[0]
    assert "3600 MiB (the most one PS holds" in why.message
    assert why.evidence["ps_memory_floor_mib"] == 3000


def test_the_hot_ps_keeps_its_peak_and_its_share_of_the_growth():
    # PS 0 carries a hot shard: it peaked at 3300 MiB and grew 3 times as fast as PS 1
    # (300 vs 100 MiB over 3000 steps). The total is 4000 + 0.1333 MiB/step (its standard
    # error about 0): 17333 MiB at step 100000, 13133 more than today's mean total (3150 +
    # 1050), 3/4 of it PS 0's: 3300 + 9850 = 13150 MiB, x 1.2 = 15780 MiB each. A share of
    # the total, 17333 / 2 x 1.2 = 10400 MiB, is below the 13000 PS 0 holds then.
    samples = [
        *series("chief-0", cpu=[2, 2, 2, 2], memory_mib=[4000] * 4),
        *series("ps-0", cpu=[1, 1, 1, 1], memory_mib=[3000, 3100, 3200, 3300]),
        *series("ps-1", cpu=[1, 1, 1, 1], memory_mib=[1000, 1033.3, 1066.7, 1100]),
    ]
    proposal = estimate(
        Limits(),
        samples,
        speed_steps([0, 1000, 2000, 3000]),
        EstimateSettings(max_workers=8, **READY),
        total_steps=100_000,
    )
    assert proposal.roles["ps"].count == 2
    assert proposal.roles["ps"].memory_mib == pytest.approx(13150 * 1.2, abs=2)


@pytest.mark.parametrize(
    ("ps0_memory", "ps1_memory", "memory_mib", "basis"),
    [
        # Each PS holds 2000 MiB of its own; the model, 4000 MiB growing 0.1 MiB/step, is
        # shared 0.6 / 0.4 (a hot part of 0.2 on PS 0, the rest halved): PS 0 4400 -> 4580,
        # PS 1 3600 -> 3720 over 3000 steps. Their growth rates give the shares, 0.6 and
        # 0.4; the line through the peaks, 4580 = own + 0.6 x model and 3720 = own + 0.4 x
        # model, gives model 4300 and own 2000. The tier at step 100000: 8000 + 0.1 x
        # 100000 = 18000 MiB, the model 18000 - 2 x 2000 = 14000. Over 8 PS the largest
        # holds the hot 0.2 and 0.4 x 2 / 8 = 0.1: 0.3 of it. 2000 + 0.3 x 14000 = 6200,
        # x 1.2 = 7440 MiB. Each PS keeping the most one PS holds with its share of the
        # growth was 4580 + 0.6 x (18000 - 8150) = 10490, x 1.2 = 12588.
        (
            [4400, 4460, 4520, 4580],
            [3600, 3640, 3680, 3720],
            7440,
            "each PS's own 2000 MiB and the largest PS's share of the 14000 MiB model, 0.30",
        ),
        # Both PS grow alike (shares 0.5 / 0.5): their memory cannot tell their own part
        # from the model, so a split keeps the most one PS holds, with its share of the
        # growth. 8000 + 0.1 x 100000 = 18000 MiB at the end, 9850 more than today's mean
        # 8150: each PS 4150 + 0.5 x 9850 = 9075, x 1.2 = 10890 MiB.
        (
            [4000, 4050, 4100, 4150],
            [4000, 4050, 4100, 4150],
            10890,
            "the most one PS holds, with its share of the growth: 9075 MiB",
        ),
    ],
    ids=["split-by-growth", "equal-shares"],
)
def test_split_ps_memory_by_what_their_growth_tells_apart(
    ps0_memory, ps1_memory, memory_mib, basis
):
    nodes = [
        node("chief-0", "chief", cpu=4, memory_mib=8192),
        node("ps-0", "ps", cpu=2, memory_mib=8192),
        node("ps-1", "ps", cpu=2, memory_mib=8192, index=1),
    ]
    samples = [
        *series("chief-0", cpu=[2, 2, 2, 2], memory_mib=[4000] * 4),
        *series("ps-0", cpu=[1, 1, 1, 1], memory_mib=ps0_memory),
        *series("ps-1", cpu=[1, 1, 1, 1], memory_mib=ps1_memory),
    ]
    the_job = job(limits=Limits(), total_steps=100_000)
    ctx = context(
        Stage.estimate,
        the_job,
        nodes=nodes,
        samples=samples,
        speed=speed_steps([0, 1000, 2000, 3000]),
    )
    proposal = ResourceEstimateOptimizer().propose(ctx, EstimateSettings(max_workers=8, **READY))
    # 8 trainers x 2 PS cores each = 16 cores in PS of 2: 8 PS.
    assert proposal.roles["ps"].count == 8
    assert proposal.roles["ps"].memory_mib == pytest.approx(memory_mib, abs=1)
    assert basis in proposal.reasons[0].message
