"""The simulator's throughput model and best-allocation search, worked out by hand."""

from __future__ import annotations

import pytest

from brain.lab.simulation.best import SITE_JOB_CPU, best_allocation
from brain.lab.simulation.model import BETA_PS_NCF, MemoryModel, ThroughputModel, normalized
from brain.lab.simulation.scenarios import SCENARIOS, RoleStart, Scenario

MODEL = ThroughputModel(
    per_worker_steps_per_sec=30, beta=BETA_PS_NCF, worker_cpu_needed=4, ps_cpu_per_step=0.04
)


def test_workers_bring_less_and_less():
    # 30 x 5 / (1 + 0.1331 x 4) = 150 / 1.5324
    assert MODEL.worker_bound([4] * 5) == pytest.approx(97.886, abs=1e-3)
    # Half the CPU a worker needs is half a worker: 30 x 1.5 / (1 + 0.1331 x 0.5)
    assert MODEL.worker_bound([4, 2]) == pytest.approx(42.192, abs=1e-3)


def test_a_slow_worker_counts_as_a_fraction_of_one():
    # 2x slower: half a worker; 30 x 1.5 / (1 + 0.1331 x 0.5), as with half the CPU
    assert MODEL.worker_weights([4, 4], [1.0, 2.0]) == [1.0, 0.5]
    assert MODEL.worker_bound([4, 4], [1.0, 2.0]) == pytest.approx(42.192, abs=1e-3)
    # both at once: 2 of 4 cores on a 2x slower host is a quarter of a worker
    assert MODEL.worker_weights([2], [2.0]) == [0.25]


def test_the_busiest_ps_caps_the_speed():
    # PS 0 carries 2/4 of the traffic: 4 cores / (0.04 x 0.5) = 200; PS 1: 2 / (0.04 x 0.25)
    shares = normalized([2, 1, 1])
    assert MODEL.ps_bound([4, 2, 4], shares) == pytest.approx(200.0)
    assert MODEL.ps_bound([4, 1, 4], shares) == pytest.approx(100.0)
    # 5 workers want 97.9 steps/s; one 2-core PS serves 2 / 0.04 = 50.
    assert MODEL.speed([4] * 5, [2], [1.0]) == pytest.approx(50.0)


def test_best_allocation_within_a_cpu_limit():
    scenario = Scenario(
        name="t",
        description="",
        roles={"ps": RoleStart(1, 2, 4096), "worker": RoleStart(1, 4, 8192)},
        throughput=MODEL,
        memory=MemoryModel(worker_mib=1000),
        limit_cpu=13,
    )
    best = best_allocation(scenario)
    # Speed depends on the effective workers n (CPU / 4 cores each); the cores used are
    # 4n + 0.04 x speed(n). n = 2.7 (3 x 3.6 cores): 10.8 + 0.04 x 81 / 1.2263 = 13.44 > 13.
    # n = 2.5 (5 x 2 cores): 10 + 0.04 x 75 / 1.19965 = 12.50 fits, and no smaller worker
    # size reaches an n between 2.5 and 2.7: 75 / 1.19965 = 62.52 steps/s.
    assert (best.workers, best.worker_cpu) == (5, 2)
    assert best.steps_per_sec == pytest.approx(62.518, abs=1e-3)
    assert best.cores == pytest.approx(12.501, abs=1e-3)

    # PS kept at most 80 % busy need 0.04 / 0.8 = 0.05 cores per step/s: n = 2.5 would
    # need 10 + 0.05 x 62.518 = 13.13 cores, so its PS get the 3 left and serve
    # 3 x 0.8 / 0.04 = 60. n = 2.4 (3 x 3.2 or 4 x 2.4 cores): 72 / (1 + 0.1331 x 1.4)
    # = 60.691 steps/s, 9.6 + 0.05 x 60.691 = 12.635 cores.
    kept = best_allocation(scenario, ps_busy=0.8)
    assert kept.workers * kept.worker_cpu == pytest.approx(9.6)
    assert kept.steps_per_sec == pytest.approx(60.691, abs=1e-3)
    assert kept.ps_cpu_total == pytest.approx(3.035, abs=1e-3)
    with pytest.raises(ValueError, match="ps_busy"):
        best_allocation(scenario, ps_busy=0)


def test_ps_memory_grows_with_steps():
    memory = SCENARIOS["ps-growing-memory"].memory
    # 1500 MiB + 0.005 MiB/step x 600,000 steps
    assert memory.ps_total(600_000) == pytest.approx(4500.0)


def test_best_allocation_without_a_limit_stays_within_the_site_budget():
    # No CPU limit: the site's 64 cores (SITE_JOB_CPU, which the in-process Brain holds
    # such a job to) bound the best. All-reduce workers needing 4 cores: at most 64 / 4 = 16
    # effective workers, 10 x 16 / (1 + 0.1 x 15) = 64 steps/s, first reached by 16 whole
    # workers (20 of 3.2 cores reach the same with as many cores).
    scenario = Scenario(
        name="t",
        description="",
        strategy="allreduce",
        roles={"worker": RoleStart(2, 8, 32768, gpu=1)},
        throughput=ThroughputModel(per_worker_steps_per_sec=10, beta=0.1, worker_cpu_needed=4),
        memory=MemoryModel(worker_mib=20000),
    )
    assert SITE_JOB_CPU == 64
    best = best_allocation(scenario)
    assert (best.workers, best.worker_cpu) == (16, 4)
    assert best.steps_per_sec == pytest.approx(64.0)
