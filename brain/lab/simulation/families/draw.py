"""Random PS jobs of the throughput families, for ``brain simulate --random N``.

What every family's job draws (the same for the same seed, job ``i`` whatever ``N``):

- a CPU limit of 8-200 cores (log-uniform); workers needing 0.5-8 cores (log-uniform)
  and doing 5-40 steps/s alone at that; a PS tier costing 0.1-0.6 of a worker's cores
  per worker at full speed;
- how it starts: oversized in 30 % (12-16 workers of 8 cores, 1-4 PS of 8 cores), at
  1 PS and 1 worker of 1, 2 or 4 cores each in 30 %, else 1-4 PS and 2-8 workers of 2,
  4 or 8 cores;
- true memory, apart from what anyone asks: a worker 1-12 GiB; the PS tier a model of
  1-64 GiB shared by traffic plus 0.5-3 GiB per PS, the model growing by 30-150 % over
  about an hour of four workers' steps in 30 % of the jobs; the ask is that need at the
  starting counts times 0.6-3 (log-uniform, whole GiB), so a third start below it;
- a stall in 30 % of the jobs: 13-17 minutes of data loading, a checkpoint or a dead
  PS 0, starting 10-32 minutes in (over before the last 10 minutes, where the reached
  speed is measured);
- a hot shard in 60 % of the hot-ps jobs and 15 % of the others: hot rows, 15-45 %
  (10-25 %) of all traffic and of the model, that stay on the first PS however many
  PS there are.

And per family (``measured``, ``hot-ps``, ``comm-bound``), the model's own parameters,
drawn in ``_measured``, ``_hot_ps`` and ``_comm_bound``.
"""

from __future__ import annotations

import math
import random

from brain.lab.simulation.families.base import FamilyModel
from brain.lab.simulation.families.comm_bound import CommBoundModel
from brain.lab.simulation.families.hot_ps import HotPsModel
from brain.lab.simulation.families.measured import MeasuredModel
from brain.lab.simulation.families.measured_table import CURVES
from brain.lab.simulation.model import MemoryModel
from brain.lab.simulation.scenarios import STALL_KINDS, RoleStart, Scenario, Stall

FAMILIES = ("measured", "hot-ps", "comm-bound")
HORIZON_S = 3600.0
GIB = 1024.0


def family_scenarios(count: int, seed: int, family: str | None = None) -> list[Scenario]:
    """``count`` jobs drawn with ``seed``: all of ``family``, or the families in turn."""
    jobs = []
    for i in range(count):
        name = family or FAMILIES[i % len(FAMILIES)]
        rng = random.Random(f"{name}-{seed}-{i}")
        jobs.append(draw_job(rng, f"{name}-{seed}-{i}", name))
    return jobs


def draw_job(rng: random.Random, name: str, family: str) -> Scenario:
    limit_cpu = round(_log_uniform(rng, 8, 200), 1)
    need = round(_log_uniform(rng, 0.5, 8), 2)
    alone = rng.uniform(5, 40)
    ps_cpu_per_step = rng.uniform(0.1, 0.6) * need / alone
    hot = rng.random() < (0.6 if family == "hot-ps" else 0.15)
    if family == "measured":
        model: FamilyModel = _measured(rng, need, alone, ps_cpu_per_step)
    elif family == "hot-ps":
        model = _hot_ps(rng, need, alone, ps_cpu_per_step)
    elif family == "comm-bound":
        model = _comm_bound(rng, need, alone, ps_cpu_per_step)
    else:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    hot_share = 0.0
    if hot:
        hot_share = rng.uniform(0.15, 0.45) if family == "hot-ps" else rng.uniform(0.1, 0.25)
    ps_count, ps_cpu, workers, worker_cpu = _start(rng)
    memory = _memory(rng, alone)
    share0 = hot_share + (1 - hot_share) / ps_count
    ps_need = memory.ps_node(0, share0)
    return Scenario(
        name=name,
        description=f"a random {family} PS job",
        roles={
            "ps": RoleStart(ps_count, cpu=ps_cpu, memory_mib=_ask(rng, ps_need)),
            "worker": RoleStart(workers, cpu=worker_cpu, memory_mib=_ask(rng, memory.worker_mib)),
        },
        throughput=model,
        memory=memory,
        limit_cpu=limit_cpu,
        hot_share=hot_share,
        total_steps=1_000_000,
        horizon_s=HORIZON_S,
        family=family,
        stalls=_stalls(rng),
    )


def _measured(rng: random.Random, need: float, alone: float, ps_cost: float) -> MeasuredModel:
    return MeasuredModel(
        curve=rng.choice(CURVES),
        per_worker_steps_per_sec=alone,
        worker_cpu_needed=need,
        ps_cpu_per_step=ps_cost,
    )


def _hot_ps(rng: random.Random, need: float, alone: float, ps_cost: float) -> HotPsModel:
    return HotPsModel(
        per_worker_steps_per_sec=alone,
        scaling_exponent=rng.uniform(0.75, 0.97),
        worker_cpu_needed=need,
        ps_cpu_per_step=ps_cost,
        ps_knee_cpu=rng.uniform(1.5, 6),
        ps_gain_past_knee=rng.uniform(0.05, 0.3),
    )


def _comm_bound(rng: random.Random, need: float, alone: float, ps_cost: float) -> CommBoundModel:
    compute_s = 1 / alone
    comm_s = compute_s * rng.uniform(0.02, 0.25)
    return CommBoundModel(
        per_worker_steps_per_sec=alone,
        worker_cpu_needed=need,
        thread_serial=rng.uniform(0.05, 0.5),
        comm_s=comm_s,
        contention_s=comm_s * rng.uniform(0, 0.1),
        serial_fraction=rng.uniform(0.005, 0.05),
        ps_cpu_per_step=ps_cost,
    )


def _start(rng: random.Random) -> tuple[int, float, int, float]:
    """(PS, cores each, workers, cores each) the job registers with."""
    shape = rng.random()
    if shape < 0.3:  # oversized
        return rng.randint(1, 4), 8.0, rng.randint(12, 16), 8.0
    if shape < 0.6:  # undersized
        return 1, float(rng.choice([1, 2, 4])), 1, float(rng.choice([1, 2, 4]))
    return (
        rng.randint(1, 4),
        float(rng.choice([2, 4, 8])),
        rng.randint(2, 8),
        float(rng.choice([2, 4, 8])),
    )


def _memory(rng: random.Random, alone: float) -> MemoryModel:
    model_mib = _log_uniform(rng, 1 * GIB, 64 * GIB)
    growth = 0.0
    if rng.random() < 0.3:  # grows by 30-150 % over an hour of four workers' steps
        growth = rng.uniform(0.3, 1.5) * model_mib / (4 * alone * HORIZON_S)
    return MemoryModel(
        worker_mib=_log_uniform(rng, 1 * GIB, 12 * GIB),
        ps_base_mib=model_mib,
        ps_mib_per_step=growth,
        ps_node_overhead_mib=rng.uniform(0.5 * GIB, 3 * GIB),
    )


def _ask(rng: random.Random, need_mib: float) -> float:
    """What the user asks for a need: 0.6-3 times it, in whole GiB."""
    return max(math.ceil(need_mib * _log_uniform(rng, 0.6, 3) / GIB), 1) * GIB


def _stalls(rng: random.Random) -> tuple[Stall, ...]:
    if rng.random() >= 0.3:
        return ()
    return (Stall(rng.choice(STALL_KINDS), rng.uniform(600, 1950), rng.uniform(780, 1020)),)


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))
