"""Random jobs for ``brain simulate --random N``: shapes no scenario chose, from stated
ranges, the same for the same seed.

Each job is a PS job (70 %) or an all-reduce GPU job, drawn as:

- PS jobs: 1-4 PS of 2, 4 or 8 cores and 4-16 GiB; 1-8 workers of 2, 4 or 8 cores;
  a worker needs 2-8 cores and does 10-40 steps/s alone; the PS tier costs 0.01-0.12
  core-seconds per global step; PS memory grows with the steps in 30 % of the jobs
  (0.001-0.01 MiB per step over 10^6 steps);
- all-reduce jobs: 1-8 workers of 1, 2, 4 or 8 GPUs (2-10 steps/s alone on them),
  a GPU limit of 8-64 or none;
- scaling: beta 0.03-0.25 (each added worker brings ``1 / (1 + beta (n - 1))``);
- a CPU limit of 8-256 cores (log-uniform), or none in 20 % of the jobs.
"""

from __future__ import annotations

import math
import random

from brain.lab.simulation.model import MemoryModel, ThroughputModel
from brain.lab.simulation.scenarios import RoleStart, Scenario

HORIZON_S = 3600.0


def random_scenarios(count: int, seed: int) -> list[Scenario]:
    """``count`` jobs drawn with ``seed`` (job ``i`` is the same whatever ``count``)."""
    return [_draw(random.Random(f"{seed}-{i}"), f"random-{seed}-{i}") for i in range(count)]


def _draw(rng: random.Random, name: str) -> Scenario:
    beta = rng.uniform(0.03, 0.25)
    limit_cpu = None if rng.random() < 0.2 else round(math.exp(rng.uniform(*_LOG_CPU)), 1)
    if rng.random() < 0.7:
        return _ps_job(rng, name, beta, limit_cpu)
    return _allreduce_job(rng, name, beta, limit_cpu)


_LOG_CPU = (math.log(8), math.log(256))


def _ps_job(rng: random.Random, name: str, beta: float, limit_cpu: float | None) -> Scenario:
    growth = rng.uniform(0.001, 0.01) if rng.random() < 0.3 else 0.0
    roles = {
        "ps": RoleStart(
            rng.randint(1, 4), cpu=rng.choice([2, 4, 8]), memory_mib=rng.choice([4096, 16384])
        ),
        "worker": RoleStart(rng.randint(1, 8), cpu=rng.choice([2, 4, 8]), memory_mib=8192),
    }
    throughput = ThroughputModel(
        per_worker_steps_per_sec=rng.uniform(10, 40),
        beta=beta,
        worker_cpu_needed=rng.uniform(2, 8),
        ps_cpu_per_step=rng.uniform(0.01, 0.12),
    )
    return Scenario(
        name=name,
        description="a random PS job",
        roles=roles,
        throughput=throughput,
        memory=MemoryModel(worker_mib=3000, ps_base_mib=1500, ps_mib_per_step=growth),
        limit_cpu=limit_cpu,
        total_steps=1_000_000,
        horizon_s=HORIZON_S,
    )


def _allreduce_job(rng: random.Random, name: str, beta: float, limit_cpu: float | None) -> Scenario:
    gpus = rng.choice([1, 2, 4, 8])
    limit_gpu = None if rng.random() < 0.3 else float(rng.choice([8, 16, 32, 64]))
    workers = rng.randint(1, 8)
    if limit_gpu is not None:
        workers = max(min(workers, int(limit_gpu // gpus)), 1)
        limit_gpu = max(limit_gpu, float(gpus))
    cpu_needed = rng.uniform(2, 8)
    if limit_cpu is not None:  # at least the one worker it starts with can run
        limit_cpu = max(limit_cpu, 8.0 * workers)
    return Scenario(
        name=name,
        description="a random all-reduce GPU job",
        strategy="allreduce",
        roles={"worker": RoleStart(workers, cpu=8, memory_mib=32768, gpu=gpus)},
        throughput=ThroughputModel(
            per_worker_steps_per_sec=rng.uniform(2, 10), beta=beta, worker_cpu_needed=cpu_needed
        ),
        memory=MemoryModel(worker_mib=20000),
        limit_cpu=limit_cpu,
        limit_gpu=limit_gpu,
        horizon_s=HORIZON_S,
    )
