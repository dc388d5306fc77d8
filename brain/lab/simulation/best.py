"""The best a scenario's job can reach within its limits: a search over the model."""

from __future__ import annotations

from dataclasses import dataclass

from brain.lab.simulation.families.base import FamilyModel
from brain.lab.simulation.model import ThroughputModel, normalized
from brain.lab.simulation.scenarios import Scenario

MAX_WORKERS = 64
# The site's CPU budget for a job without a CPU limit (BRAIN_DEFAULT_JOB_CPU), which the
# in-process Brain runs with: Brain holds such a job to it, so its best is judged within
# it too.
SITE_JOB_CPU = 64.0
# PS counts searched: 1 to 8, or to the most PS the run had when it ran more (a best below
# what the run itself reached would put reached/best above 1).
MAX_PS = 8
# Worker CPU as a fraction of what a worker needs: a smaller worker may let one more fit.
WORKER_CPU_FRACTIONS = (1.0, 0.9, 0.8, 0.75, 0.6, 0.5)


@dataclass(frozen=True)
class Allocation:
    steps_per_sec: float
    workers: int
    worker_cpu: float
    ps: int
    ps_cpu_total: float

    @property
    def cores(self) -> float:
        return self.workers * self.worker_cpu + self.ps_cpu_total


def best_allocation(
    s: Scenario, global_step: float = 0.0, max_ps: int = MAX_PS, ps_busy: float = 1.0
) -> Allocation:
    """The highest speed within the job's CPU and GPU limits (fewest cores on a tie), with
    the PS cost the job has after ``global_step`` steps (the scenarios whose cost grows
    are judged on their last one). A job without a CPU limit is held to the site's
    budget, ``SITE_JOB_CPU``. PS jobs are searched with 1 to ``max_ps`` PS.

    PS get CPU in proportion to their traffic, each at most the largest node, and use at
    most ``ps_busy`` of it (1: exactly what they need; 0.85 keeps the headroom the PS
    rules keep); every worker keeps its declared GPUs (an all-reduce job scales by whole
    workers).
    """
    if not 0 < ps_busy <= 1:
        raise ValueError(f"ps_busy must be in (0, 1], got {ps_busy}")
    model = s.throughput_at(global_step)
    if isinstance(model, FamilyModel):
        return family_best(s, model, max_ps, ps_busy)
    gpu_each = s.roles["worker"].gpu
    best = Allocation(0.0, 0, 0.0, 0, 0.0)
    ps_counts = range(1, max_ps + 1) if s.strategy == "ps" else (0,)
    limit_cpu = SITE_JOB_CPU if s.limit_cpu is None else s.limit_cpu
    for workers in range(1, MAX_WORKERS + 1):
        if s.limit_gpu is not None and workers * gpu_each > s.limit_gpu + 1e-9:
            break
        for fraction in WORKER_CPU_FRACTIONS:
            worker_cpu = model.worker_cpu_needed * fraction
            demand = model.worker_bound([worker_cpu] * workers)
            budget = limit_cpu - workers * worker_cpu
            if budget < 0:
                continue
            for ps in ps_counts:
                candidate = _with_ps(s, model, workers, worker_cpu, demand, ps, budget, ps_busy)
                if candidate is not None and _better(candidate, best):
                    best = candidate
    return best


def _with_ps(
    s: Scenario,
    model: ThroughputModel,
    workers: int,
    worker_cpu: float,
    demand: float,
    ps: int,
    budget: float,
    ps_busy: float,
) -> Allocation | None:
    if ps == 0:
        return Allocation(demand, workers, worker_cpu, 0, 0.0)
    shares = normalized([s.ps_weight(i) for i in range(ps)])
    needed = model.ps_cpu_per_step * demand / ps_busy
    total = min(needed, budget)
    if total <= 0:
        return None
    cpus = [min(share * total, s.node_max_cpu) for share in shares]
    speed = min(demand, model.ps_bound([cpu * ps_busy for cpu in cpus], shares))
    return Allocation(speed, workers, worker_cpu, ps, sum(cpus))


def _better(a: Allocation, b: Allocation) -> bool:
    if abs(a.steps_per_sec - b.steps_per_sec) > 1e-6:
        return a.steps_per_sec > b.steps_per_sec
    return a.cores < b.cores


# A family's job may run many small workers: it is searched up to this many, and worker
# CPU down to a quarter of what a worker needs (a comm-bound worker at half its cores
# still computes at two thirds of its speed).
FAMILY_MAX_WORKERS = 512
FAMILY_WORKER_CPU_FRACTIONS = (1.0, 0.9, 0.8, 0.75, 0.6, 0.5, 0.35, 0.25)
# Relative precision of the bisection on a PS tier's speed when the cores run short.
_BISECT_STEPS = 40


def family_best(
    s: Scenario, model: FamilyModel, max_ps: int = MAX_PS, ps_busy: float = 1.0
) -> Allocation:
    """The fastest allocation of a family's PS job within its CPU limit (fewest cores on
    a tie): every worker count and size, every PS count up to ``max_ps``, each PS given
    the cores its share of that speed needs over ``ps_busy`` (the speed the cores left
    allow, found by bisection, when they do not cover it)."""
    limit_cpu = SITE_JOB_CPU if s.limit_cpu is None else s.limit_cpu
    best = Allocation(0.0, 0, 0.0, 0, 0.0)
    for fraction in FAMILY_WORKER_CPU_FRACTIONS:
        worker_cpu = model.worker_cpu_needed * fraction
        weight = model.worker_factor(worker_cpu)
        for workers in range(1, FAMILY_MAX_WORKERS + 1):
            budget = limit_cpu - workers * worker_cpu
            if budget <= 0:
                break
            for ps in range(1, max_ps + 1):
                demand = model.uniform_speed(workers, weight, ps)
                if demand < best.steps_per_sec - 1e-6:
                    continue  # even PS that cost nothing would not beat the best
                shares = s.ps_shares(range(ps))
                speed = _ps_tier_speed(model, shares, demand, budget, s.node_max_cpu, ps_busy)
                cpus = [model.ps_cpu_for(speed, share) / ps_busy for share in shares]
                candidate = Allocation(speed, workers, worker_cpu, ps, sum(cpus))
                if _better(candidate, best):
                    best = candidate
    return best


def _ps_tier_speed(
    model: FamilyModel,
    shares: list[float],
    demand: float,
    budget: float,
    node_max_cpu: float,
    ps_busy: float = 1.0,
) -> float:
    """The fastest the PS tier can serve, up to ``demand``, within ``budget`` cores in all
    and ``node_max_cpu`` each, each PS using at most ``ps_busy`` of its cores (the PS's
    needs rise with the speed, so bisect on it)."""

    def fits(speed: float) -> bool:
        cpus = [model.ps_cpu_for(speed, share) / ps_busy for share in shares]
        return max(cpus) <= node_max_cpu + 1e-9 and sum(cpus) <= budget + 1e-9

    if fits(demand):
        return demand
    low, high = 0.0, demand
    for _ in range(_BISECT_STEPS):
        middle = (low + high) / 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
