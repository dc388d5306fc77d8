"""GPUs per node in the default create plan: per card, from compute and memory, within
the request and the GPU limit."""

from __future__ import annotations

import math

import pytest

from brain.config import Settings
from brain.domain import Limits, Resources, RoleSpec, Stage
from brain.optimizing import HistoricalJob, NodeUsage, load_registry
from brain.optimizing.pipeline import run_stage
from optimizers.gpu_cpu import GpuCpuSettings, GpuCpuSuggestionOptimizer
from optimizers.learned_margin import LearnedMarginOptimizer, LearnedMarginSettings
from tests.builders.views import context, job

CARD_MIB = 16384.0


def four_gpu_run(uid: str, util: float, memory_fraction: float) -> HistoricalJob:
    """A 1-hour run whose worker pod holds 4 cards: the collector reports the GPU memory
    of the pod, used and total, summed over its 4 cards."""
    total = 4 * CARD_MIB
    worker = NodeUsage(
        name="worker-0",
        role="worker",
        requested=Resources(cpu=8, memory_mib=32768, gpu=4),
        cpu_mean=4,
        cpu_max=6,
        cpu_p95=6,
        memory_mean_mib=10000,
        memory_max_mib=12000,
        gpu_util_mean=util,
        gpu_memory_max_mib=memory_fraction * total,
        gpu_memory_total_mib=total,
    )
    base = job(uid=uid, gpu_type="A100", duration_s=3600)
    return HistoricalJob(job=base, nodes=(worker,))


def new_job(gpu: float = 4, limits: Limits | None = None, count: int = 1):
    roles = {"worker": RoleSpec(count=count, cpu=8, memory_mib=32768, gpu=gpu)}
    return job(gpu_type="A100", roles=roles, limits=limits)


def default_plan(history, the_job):
    ctx = context(Stage.create, the_job, history=history)
    return run_stage(load_registry(), Stage.create, ctx, Settings()).proposal


def test_default_create_plan_counts_gpus_per_card():
    # 3 runs on 4 cards at 33 % mean utilization and 45 % peak memory of the pod.
    history = [four_gpu_run(f"r{i}", 0.33, 0.45) for i in range(3)]
    proposal = default_plan(history, new_job())
    gpu = proposal.roles["worker"].gpu
    # gpu_cpu: 4 x 0.45 / 0.9 = 2. learned_margin: the pod's peak 0.45 x 65536 = 29491.2
    # MiB, x (1 + 0.3 / sqrt 3) + 1536 MiB = 36134 MiB over 16384 MiB cards = 2.21 ->
    # 3 whole cards (it took the pod total for one card: 0.56 GPU).
    expected = math.ceil((29491.2 * (1 + 0.3 / math.sqrt(3)) + 1536) / CARD_MIB)
    assert gpu == expected == 3
    learned = next(r for r in proposal.reasons if r.optimizer == "learned_margin")
    assert learned.evidence["gpu"]["card_mib"] == CARD_MIB
    assert learned.evidence["gpu"]["gpu_memory_cards"] == pytest.approx(1.8)


def test_busy_cards_are_never_sized_below_their_compute_nor_above_the_request():
    # 97 % busy, 90 % memory: 4 x 0.97 / 0.9 = 4.31 GPUs wanted, the request is 4.
    history = [four_gpu_run(f"r{i}", 0.97, 0.90) for i in range(3)]
    seed = GpuCpuSuggestionOptimizer().propose(
        context(Stage.create, new_job(), history=history), GpuCpuSettings()
    )
    assert seed.roles["worker"].gpu == 4  # was 5, above the request
    assert "capped at 4 GPUs" in seed.reasons[0].message
    assert default_plan(history, new_job()).roles["worker"].gpu == 4  # was 1.07


def test_little_memory_does_not_hide_busy_compute():
    # 10 % of the memory but 60 % busy: memory alone says 0.26 cards; the compute in use
    # is 4 x 0.6 = 2.4 GPUs, / 0.9 = 2.67 -> 3.
    history = [four_gpu_run(f"r{i}", 0.60, 0.10) for i in range(3)]
    ctx = context(Stage.create, new_job(), history=history)
    learned = LearnedMarginOptimizer().propose(ctx, LearnedMarginSettings())
    assert learned.roles["worker"].gpu == 3
    assert learned.reasons[0].evidence["gpu"]["gpu_floor"] == pytest.approx(2.4 / 0.9, abs=1e-4)


def test_the_gpu_limit_shared_over_the_nodes_caps_each_node():
    # 2 workers under a limit of 4 GPUs: at most 2 per node, whatever the runs used.
    history = [four_gpu_run(f"r{i}", 0.97, 0.90) for i in range(3)]
    the_job = new_job(gpu=4, limits=Limits(gpu=4), count=2)
    proposal = default_plan(history, the_job)
    assert proposal.roles["worker"].gpu == 2


def test_fractional_gpus_only_where_the_site_allows_them():
    history = [four_gpu_run(f"r{i}", 0.30, 0.40) for i in range(3)]
    ctx = context(Stage.create, new_job(), history=history)
    whole = GpuCpuSuggestionOptimizer().propose(ctx, GpuCpuSettings())
    shared = GpuCpuSuggestionOptimizer().propose(ctx, GpuCpuSettings(gpu_step=0.1))
    # 4 x 0.40 / 0.9 = 1.78: 2 whole GPUs, or 1.8 where cards are shared
    assert (whole.roles["worker"].gpu, shared.roles["worker"].gpu) == (2, 1.8)
