"""The `measured` family: workers scale as a measured model did (a curve fitted to
Pollux's and Gavel's step times, ``measured_table``), the PS tier costs a fixed number
of core-seconds per step.

A worker with less CPU than it needs computes at that fraction of its speed; the
curve then counts it as that fraction of a worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from brain.lab.simulation.families.base import FamilyModel, linear_ps_cpu, linear_ps_rate
from brain.lab.simulation.families.measured_curve import MeasuredCurve


@dataclass(frozen=True)
class MeasuredModel(FamilyModel):
    curve: MeasuredCurve
    per_worker_steps_per_sec: float
    worker_cpu_needed: float
    ps_cpu_per_step: float
    family: str = "measured"

    def worker_factor(self, cpu: float) -> float:
        return min(1.0, cpu / self.worker_cpu_needed)

    def workers_speed(self, weights: Sequence[float], ps_count: int) -> list[float]:
        n = sum(weights)
        total = self.per_worker_steps_per_sec * self.curve.speedup(n)
        return [total * w / n if n > 0 else 0.0 for w in weights]

    def uniform_speed(self, workers: int, weight: float, ps_count: int) -> float:
        return self.per_worker_steps_per_sec * self.curve.speedup(workers * weight)

    def ps_rate(self, cpu: float, share: float) -> float:
        return linear_ps_rate(cpu, share, self.ps_cpu_per_step)

    def ps_cpu_for(self, steps_per_sec: float, share: float) -> float:
        return linear_ps_cpu(steps_per_sec, share, self.ps_cpu_per_step)
