"""The training-speed and memory model of a simulated job.

Speed with ``n`` effective workers is ``n x per_worker / (1 + beta x (n - 1))`` (each
added worker brings less), capped by what the parameter servers can serve: PS ``i``
carries ``share_i`` of the traffic and needs ``ps_cpu_per_step x share_i`` core-seconds
per global step, so it saturates at ``cpu_i / (ps_cpu_per_step x share_i)`` steps/s.
A worker with less CPU than it needs counts as that fraction of a worker, and a worker
on a slow host (``slowdown`` > 1) as ``1 / slowdown`` of one: its mini-batches take that
much longer.

``beta`` was fitted by ``scripts/fit_throughput.py`` on ../shared/data/throughput/
(the tests cannot read it, so the fitted values live here):
- PS jobs use Pollux's NCF recommendation model: step time at n replicas over the
  single-GPU step time, ``1 + 0.1331 (n - 1)`` (36 rows, local batch 32);
- the all-reduce GPU job uses Gavel's V100 isolated throughputs at 1/2/4/8 GPUs,
  median over 26 job types: ``beta = 0.1057`` (57 points).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BETA_PS_NCF = 0.1331
BETA_ALLREDUCE_V100 = 0.1057


@dataclass(frozen=True)
class ThroughputModel:
    per_worker_steps_per_sec: float
    beta: float
    worker_cpu_needed: float
    # PS core-seconds per global step, whole job; 0 for a job without PS.
    ps_cpu_per_step: float = 0.0

    def worker_weights(
        self, worker_cpus: Sequence[float], slowdowns: Sequence[float] | None = None
    ) -> list[float]:
        """What each worker counts as: its CPU share of what it needs, over its slowdown."""
        slowdowns = slowdowns or [1.0] * len(worker_cpus)
        return [
            min(1.0, cpu / self.worker_cpu_needed) / slow
            for cpu, slow in zip(worker_cpus, slowdowns, strict=True)
        ]

    def effective_workers(
        self, worker_cpus: Sequence[float], slowdowns: Sequence[float] | None = None
    ) -> float:
        return sum(self.worker_weights(worker_cpus, slowdowns))

    def worker_bound(
        self, worker_cpus: Sequence[float], slowdowns: Sequence[float] | None = None
    ) -> float:
        """Steps/s the workers could do with idle PS."""
        n = self.effective_workers(worker_cpus, slowdowns)
        if n <= 0:
            return 0.0
        return self.per_worker_steps_per_sec * n / (1 + self.beta * max(n - 1, 0))

    def ps_bound(self, ps_cpus: Sequence[float], shares: Sequence[float]) -> float:
        """Steps/s the PS can serve: the first one to saturate decides."""
        if self.ps_cpu_per_step <= 0:
            return float("inf")
        if not ps_cpus:
            return 0.0
        return min(
            cpu / (self.ps_cpu_per_step * share) for cpu, share in zip(ps_cpus, shares, strict=True)
        )

    def speed(
        self,
        worker_cpus: Sequence[float],
        ps_cpus: Sequence[float],
        shares: Sequence[float],
        slowdowns: Sequence[float] | None = None,
    ) -> float:
        return min(self.worker_bound(worker_cpus, slowdowns), self.ps_bound(ps_cpus, shares))

    def load(
        self,
        worker_cpus: Sequence[float],
        ps_cpus: Sequence[float],
        shares: Sequence[float],
        slowdowns: Sequence[float],
    ) -> JobLoad:
        """Speed, each worker's steps and the cores each pod uses. A worker uses the CPU
        it needs (at most its own) at the pace the PS allow; each worker makes its
        weight's share of the steps."""
        speed = self.speed(worker_cpus, ps_cpus, shares, slowdowns)
        bound = self.worker_bound(worker_cpus)
        pace = speed / bound if bound > 0 else 0.0
        weights = self.worker_weights(worker_cpus, slowdowns)
        total = sum(weights)
        return JobLoad(
            steps_per_sec=speed,
            worker_steps_per_sec=[speed * w / total if w > 0 else 0.0 for w in weights],
            worker_cpu=[min(cpu, self.worker_cpu_needed) * pace for cpu in worker_cpus],
            ps_cpu=[self.ps_cpu_per_step * share * speed for share in shares],
            pace=pace,
        )


@dataclass(frozen=True)
class JobLoad:
    """What a job's pods do with a given allocation, before noise."""

    steps_per_sec: float
    worker_steps_per_sec: list[float]
    # Cores each pod uses (a PS's may exceed its request; the simulator caps it).
    worker_cpu: list[float]
    ps_cpu: list[float]
    # The speed over what the workers could do with the PS answering at once.
    pace: float


def normalized(weights: Sequence[float]) -> list[float]:
    total = sum(weights)
    return [w / total for w in weights]


@dataclass(frozen=True)
class MemoryModel:
    """MiB used: a worker a fixed amount; the PS together a base plus growth per step,
    shared by traffic, and each PS a fixed overhead of its own (runtime, buffers)."""

    worker_mib: float
    ps_base_mib: float = 0.0
    ps_mib_per_step: float = 0.0
    ps_node_overhead_mib: float = 0.0

    def ps_total(self, global_step: float) -> float:
        return self.ps_base_mib + self.ps_mib_per_step * global_step

    def ps_node(self, global_step: float, share: float) -> float:
        """What one PS carrying ``share`` of the traffic uses."""
        return self.ps_node_overhead_mib + self.ps_total(global_step) * share
