"""What the throughput families share: a PS job runs at the lesser of what its workers
could do with the PS answering at once and what its busiest PS can serve.

A family says how a worker's CPU turns into speed (``worker_factor``), how workers
together make steps (``workers_speed``; it may depend on the PS count, as communication
does), and how a PS's cores turn into steps it can serve (``ps_rate``, with its inverse
``ps_cpu_for``). None of them is the optimizers' own formula; each is written apart
from it, so a plan is judged against a job Brain did not model.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from brain.lab.simulation.model import JobLoad


class FamilyModel(ABC):
    family: str
    # Cores past which a worker gains nothing (threads it cannot use).
    worker_cpu_needed: float

    @abstractmethod
    def worker_factor(self, cpu: float) -> float:
        """A worker's compute speed at ``cpu`` cores, as a fraction (0..1) of its speed at
        ``worker_cpu_needed``."""

    @abstractmethod
    def workers_speed(self, weights: Sequence[float], ps_count: int) -> list[float]:
        """Steps/s each worker makes with the PS answering at once; ``weights`` are the
        workers' compute fractions (``worker_factor`` over the host's slowdown)."""

    def worker_busy(self, weights: Sequence[float], ps_count: int) -> list[float]:
        """The share of each worker's step spent computing (the rest waits on the
        network); a family without communication time computes all the time."""
        return [1.0] * len(weights)

    def uniform_speed(self, workers: int, weight: float, ps_count: int) -> float:
        """Steps/s of ``workers`` equal workers: the best search asks this of every
        candidate, so families give it in closed form where they can."""
        return sum(self.workers_speed([weight] * workers, ps_count))

    @abstractmethod
    def ps_rate(self, cpu: float, share: float) -> float:
        """Steps/s a PS with ``cpu`` cores carrying ``share`` of the traffic can serve."""

    @abstractmethod
    def ps_cpu_for(self, steps_per_sec: float, share: float) -> float:
        """Cores a PS carrying ``share`` of the traffic needs to serve ``steps_per_sec``
        (``ps_rate``'s inverse; ``inf`` if no size can)."""

    # What the simulator asks -------------------------------------------------------------

    def weights(self, worker_cpus: Sequence[float], slowdowns: Sequence[float]) -> list[float]:
        return [
            self.worker_factor(cpu) / slow for cpu, slow in zip(worker_cpus, slowdowns, strict=True)
        ]

    def ps_bound(self, ps_cpus: Sequence[float], shares: Sequence[float]) -> float:
        if not ps_cpus:
            return 0.0
        return min(self.ps_rate(cpu, share) for cpu, share in zip(ps_cpus, shares, strict=True))

    def speed(
        self,
        worker_cpus: Sequence[float],
        ps_cpus: Sequence[float],
        shares: Sequence[float],
        slowdowns: Sequence[float] | None = None,
    ) -> float:
        return self.load(
            worker_cpus, ps_cpus, shares, slowdowns or [1.0] * len(worker_cpus)
        ).steps_per_sec

    def load(
        self,
        worker_cpus: Sequence[float],
        ps_cpus: Sequence[float],
        shares: Sequence[float],
        slowdowns: Sequence[float],
    ) -> JobLoad:
        weights = self.weights(worker_cpus, slowdowns)
        rates = self.workers_speed(weights, len(ps_cpus)) if weights else []
        demand = sum(rates)
        speed = min(demand, self.ps_bound(ps_cpus, shares))
        pace = speed / demand if demand > 0 else 0.0
        busy = self.worker_busy(weights, len(ps_cpus)) if weights else []
        return JobLoad(
            steps_per_sec=speed,
            worker_steps_per_sec=[r * pace for r in rates],
            worker_cpu=[
                min(cpu, self.worker_cpu_needed) * b * pace
                for cpu, b in zip(worker_cpus, busy, strict=True)
            ],
            ps_cpu=[
                min(self.ps_cpu_for(speed, share), cpu)
                for cpu, share in zip(ps_cpus, shares, strict=True)
            ],
            pace=pace,
        )


def linear_ps_cpu(steps_per_sec: float, share: float, cpu_per_step: float) -> float:
    """Cores a PS needs when each global step costs the tier ``cpu_per_step``."""
    return steps_per_sec * cpu_per_step * share


def linear_ps_rate(cpu: float, share: float, cpu_per_step: float) -> float:
    return math.inf if share <= 0 else cpu / (cpu_per_step * share)
