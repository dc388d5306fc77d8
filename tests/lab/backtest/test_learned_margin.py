"""The learned_margin optimizer on small hand-made histories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from brain.domain import JobStatus, Limits, Resources, RoleSpec, Stage, Strategy
from brain.optimizing import HistoricalJob, JobView, NodeUsage, OptimizerContext, load_registry
from optimizers.learned_margin import (
    MEMORY_BELOW_PEAK,
    LearnedMarginOptimizer,
    LearnedMarginSettings,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)
# Plain settings that make the arithmetic easy to follow: no early margin, no headroom,
# no bump, no floor, a window of 3 runs, the largest peak at every safety.
PLAIN = dict(
    memory_margin=1.1,
    memory_early_margin=0.0,
    memory_headroom_mib=0.0,
    memory_window=3,
    memory_floor=0.0,
    memory_quantile=1.0,
    memory_bump=0.0,
    cpu_margin=1.0,
    cpu_early_margin=0.0,
    cpu_headroom=0.0,
    cpu_window=3,
    cpu_floor=0.0,
    cpu_quantile=1.0,
    cpu_bump=0.0,
    gpu_memory_margin=1.0,
    gpu_memory_early_margin=0.0,
    gpu_memory_headroom_mib=0.0,
    gpu_memory_window=2,
    gpu_memory_floor=0.0,
    gpu_memory_quantile=1.0,
    gpu_memory_bump=0.0,
)


def settings(**changes) -> LearnedMarginSettings:
    return LearnedMarginSettings(**(PLAIN | changes))


def job_view(uid: str, start: datetime, spec: RoleSpec, finished: bool) -> JobView:
    return JobView(
        uid=uid,
        name="w",
        user="u",
        dataset=None,
        group_key="w",
        strategy=Strategy.allreduce,
        status=JobStatus.succeeded if finished else JobStatus.pending,
        limits=Limits(),
        roles={"worker": spec},
        started_at=start,
        finished_at=start + timedelta(hours=1) if finished else None,
    )


def past(
    i: int,
    memory: float,
    cpu_max: float = 1.0,
    cpu_p95: float | None = None,
    requested_mib: float = 100_000,
    gpu_memory: float | None = None,
    requested_gpu: float = 1,
) -> HistoricalJob:
    spec = RoleSpec(count=1, cpu=8, memory_mib=requested_mib)
    usage = NodeUsage(
        name="worker-0",
        role="worker",
        requested=Resources(cpu=8, memory_mib=requested_mib, gpu=requested_gpu),
        cpu_mean=cpu_max / 2,
        cpu_max=cpu_max,
        cpu_p95=cpu_max if cpu_p95 is None else cpu_p95,
        memory_mean_mib=memory / 2,
        memory_max_mib=memory,
        gpu_memory_max_mib=gpu_memory,
        gpu_memory_total_mib=80_000 if gpu_memory else None,
    )
    return HistoricalJob(job_view(f"r{i}", T0 + timedelta(days=i), spec, True), (usage,))


def propose(history_oldest_first, config, *, memory_mib=100_000, gpu=None):
    spec = RoleSpec(count=1, cpu=8, memory_mib=memory_mib, gpu=gpu)
    context = OptimizerContext(
        stage=Stage.create,
        now=T0 + timedelta(days=100),
        job=job_view("next", T0 + timedelta(days=100), spec, False),
        history=list(reversed(history_oldest_first)),  # the context holds most recent first
    )
    return LearnedMarginOptimizer().propose(context, config)


def memory_of(peaks, config, memory_mib=100_000):
    history = [past(i, p, requested_mib=memory_mib) for i, p in enumerate(peaks)]
    return propose(history, config, memory_mib=memory_mib).roles["worker"].memory_mib


def test_the_size_is_the_recent_envelope_times_the_margin():
    # the last 3 peaks are 1200, 1100, 900 -> 1200 x 1.1
    assert memory_of([1000, 1200, 1100, 900], settings()) == 1320


def test_an_old_spike_fades_out_of_the_window_but_the_floor_keeps_part_of_it():
    peaks = [5000, 1000, 1000, 1000]
    assert memory_of(peaks, settings()) == 1100  # the spike is 4 runs old
    # floor 0.5: envelope max(1000, 0.5 x 5000) = 2500 -> x 1.1
    assert memory_of(peaks, settings(memory_floor=0.5)) == 2750


def test_after_an_under_provisioned_run_the_margin_is_bumped():
    config = settings(memory_bump=0.5, bump_fade=1.0)
    # Replayed on its own history: run 2 (2000) would have got 1000 x 1.1 = 1100, a
    # miss -> factor 1.1 + 0.5; the envelope is 2000 -> 3200.
    assert memory_of([1000, 1000, 2000, 2000], config) == 3200
    # The same peaks without the jump: no miss, plain 2000 x 1.1.
    assert memory_of([2000, 2000, 2000, 2000], config) == 2200


def test_the_bump_fades_while_runs_fit():
    config = settings(memory_bump=0.5, bump_fade=0.5)
    # miss at run 2 -> bonus 0.5; runs 3 and 4 fit -> 0.25, then 0.125: 2000 x 1.225
    assert memory_of([1000, 1000, 2000, 2000, 2000], config) == 2450


def test_thin_histories_get_a_wider_margin():
    config = settings(memory_early_margin=0.4)
    # 1 run: 1000 x (1.1 + 0.4 / 1); 4 runs: 1000 x (1.1 + 0.4 / 2)
    assert memory_of([1000], config) == 1500
    assert memory_of([1000] * 4, config) == 1300


def test_memory_is_capped_by_the_request_unless_told_otherwise():
    assert memory_of([1000, 2000], settings(), memory_mib=1500) == 1500
    assert memory_of([1000, 2000], settings(cap_memory_at_request=False), memory_mib=1500) == 2200


def test_memory_below_the_newest_peak_is_said():
    # capped at the 1500 MiB request, below the newest run's 2000 MiB peak: said
    history = [past(i, p, requested_mib=1500) for i, p in enumerate([1000, 2000])]
    [why] = propose(history, settings(), memory_mib=1500).reasons
    assert why.evidence[MEMORY_BELOW_PEAK] == 2000
    assert "memory 1500 MiB is below the newest run's peak 2000 MiB" in why.message
    # 2000 x 1.1 = 2200 holds it: nothing to say
    [fits] = propose(history, settings(cap_memory_at_request=False), memory_mib=1500).reasons
    assert MEMORY_BELOW_PEAK not in fits.evidence


def test_a_changed_request_keeps_its_memory_but_cpu_is_still_sized():
    history = [past(i, 1000, requested_mib=2000) for i in range(3)]
    proposal = propose(history, settings(), memory_mib=4000)  # +100% since the last run
    spec = proposal.roles["worker"]
    assert spec.memory_mib == 4000  # the request stands, stated (no seed rule replaces it)
    assert spec.cpu == 1.0
    assert "memory request changed by 100%" in proposal.reasons[0].message
    # a change within request_change is not one
    assert propose(history, settings(), memory_mib=2050).roles["worker"].memory_mib == 1100


def test_cpu_is_sized_on_peak_cpu_but_bumped_only_when_the_p95_did_not_fit():
    config = settings(cpu_bump=1.0, bump_fade=1.0)
    # peak CPU jumps from 1 to 3 at run 2, the p95 stays at 0.5: no bump, 3 x 1.0
    steady_p95 = [past(i, 1000, cpu_max=m, cpu_p95=0.5) for i, m in enumerate([1, 1, 3])]
    assert propose(steady_p95, config).roles["worker"].cpu == 3.0
    # the p95 follows it to 2.5 > 1: one miss -> 3 x (1 + 1)
    rising_p95 = [past(i, 1000, cpu_max=m, cpu_p95=m * 0.8) for i, m in enumerate([1, 1, 3])]
    assert propose(rising_p95, config).roles["worker"].cpu == 6.0


def test_gpu_memory_becomes_cards_capped_by_the_gpus_asked_for():
    def history(gpus):
        return [
            past(i, 1000, gpu_memory=g, requested_gpu=gpus) for i, g in enumerate([20_000, 30_000])
        ]

    # 30000 / 80000 = 0.375, rounded up to 0.01 where the site shares cards
    shares = settings(gpu_step=0.01)
    assert propose(history(1), shares, gpu=1).roles["worker"].gpu == 0.38
    assert propose(history(0.25), shares, gpu=0.25).roles["worker"].gpu == 0.25
    # whole GPUs by default: a pod requests nvidia.com/gpu in whole cards
    assert propose(history(1), settings(), gpu=1).roles["worker"].gpu == 1
    # asking for a quarter card after a whole one is a changed request: it stands
    assert propose(history(1), settings(), gpu=0.25).roles["worker"].gpu == 0.25
    assert propose([past(0, 1000)], settings(), gpu=1).roles["worker"].gpu is None


def test_safety_scales_every_margin_and_headroom():
    config = settings(memory_early_margin=1.0, memory_headroom_mib=500, safety=0.0)
    assert memory_of([1000, 1200], config) == 1200  # the bare envelope
    # safety 2: 1200 x (1 + 2 x (0.1 + 1 / sqrt 2)) + 2 x 500 = 4137.06 -> 4138 MiB
    doubled = config.model_copy(update={"safety": 2.0})
    assert memory_of([1000, 1200], doubled) == 4138


def test_below_safety_1_the_envelope_is_a_quantile_of_the_recent_peaks():
    peaks = [1000, 1200, 1100, 900]  # the last 3, sorted: 900, 1100, 1200
    config = settings(memory_quantile=0.5, safety=0.0)
    # safety 0: the median, 1100, and no margin at all
    assert memory_of(peaks, config) == 1100
    # safety 0.5: level 0.5 + 0.5 x (1 - 0.5) = 0.75, position 0.75 x 2 = 1.5 between
    # 1100 and 1200 -> 1150; factor 1 + 0.5 x 0.1 = 1.05 -> 1207.5 -> 1208 MiB
    assert memory_of(peaks, config.model_copy(update={"safety": 0.5})) == 1208
    # safety 1 and above: the largest, as with quantile 1 -> 1200 x 1.1
    assert memory_of(peaks, config.model_copy(update={"safety": 1.0})) == 1320
    # quantile 0: the smallest recent peak at safety 0, but the floor still holds:
    # max(900, 0.8 x 1200) = 960
    assert memory_of(peaks, settings(memory_quantile=0.0, safety=0.0)) == 900
    assert memory_of(peaks, settings(memory_quantile=0.0, memory_floor=0.8, safety=0.0)) == 960


def test_the_quantile_envelope_also_sizes_cpu():
    # CPU peaks 1, 2, 4 (p95 all 0.5: no bump); quantile 0.25 at safety 0:
    # position 0.25 x 2 = 0.5 between 1 and 2 -> 1.5 cores
    history = [past(i, 1000, cpu_max=m, cpu_p95=0.5) for i, m in enumerate([1, 2, 4])]
    assert propose(history, settings(cpu_quantile=0.25, safety=0.0)).roles["worker"].cpu == 1.5


def test_the_default_quantiles_leave_the_default_sizes_on_the_largest_peak():
    defaults = LearnedMarginSettings()
    assert defaults.safety == 1.0
    assert all(getattr(defaults, f"{r}_quantile") < 1.0 for r in ("memory", "cpu", "gpu_memory"))
    peaks = [1000, 1200, 1100, 900]
    plain_max = settings(memory_quantile=1.0)
    assert memory_of(peaks, settings(memory_quantile=0.3)) == memory_of(peaks, plain_max)


def test_a_role_without_enough_history_gets_no_proposal():
    proposal = propose([past(0, 1000)], settings(min_runs=2))
    assert proposal.roles == {}
    assert "history too thin" in proposal.reasons[0].message


def test_it_is_registered_with_valid_default_settings():
    optimizer = load_registry().get("learned_margin")
    assert isinstance(optimizer, LearnedMarginOptimizer)
    assert Stage.create in optimizer.stages
    defaults = optimizer.Settings()
    assert defaults.safety == 1.0 and defaults.cap_memory_at_request
    schema = optimizer.Settings.model_json_schema()["properties"]
    assert all("description" in field for field in schema.values())


@pytest.mark.parametrize(
    "field", ["memory_margin", "cpu_window", "safety", "bump_fade", "cpu_quantile"]
)
def test_settings_are_bounded(field):
    with pytest.raises(ValueError):
        LearnedMarginSettings(**{field: -1})
