"""The `hot-ps` family: PS that saturate, and uneven shards.

Workers scale as a power of their number, ``per_worker x n^alpha`` (``alpha`` < 1:
each added worker brings a little less, and never makes the job slower). A PS turns
its cores into service up to a knee (``ps_knee_cpu``: its single-threaded parts, lock
contention on the hot rows); each core past the knee counts as ``ps_gain_past_knee`` of
one. So a saturated PS given more CPU is still busy and barely faster, and a hot shard
(a PS carrying more than its share of the traffic) caps the job however many cores it
gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from brain.lab.simulation.families.base import FamilyModel


@dataclass(frozen=True)
class HotPsModel(FamilyModel):
    per_worker_steps_per_sec: float
    scaling_exponent: float  # alpha
    worker_cpu_needed: float
    ps_cpu_per_step: float  # core-seconds per global step below the knee, whole tier
    ps_knee_cpu: float
    ps_gain_past_knee: float
    family: str = "hot-ps"

    def worker_factor(self, cpu: float) -> float:
        return min(1.0, cpu / self.worker_cpu_needed)

    def workers_speed(self, weights: Sequence[float], ps_count: int) -> list[float]:
        n = sum(weights)
        total = self.per_worker_steps_per_sec * n**self.scaling_exponent if n > 0 else 0.0
        return [total * w / n if n > 0 else 0.0 for w in weights]

    def uniform_speed(self, workers: int, weight: float, ps_count: int) -> float:
        return self.per_worker_steps_per_sec * (workers * weight) ** self.scaling_exponent

    def effective_ps_cpu(self, cpu: float) -> float:
        """What ``cpu`` cores of one PS serve like, in cores below the knee."""
        if cpu <= self.ps_knee_cpu:
            return cpu
        return self.ps_knee_cpu + self.ps_gain_past_knee * (cpu - self.ps_knee_cpu)

    def ps_rate(self, cpu: float, share: float) -> float:
        return self.effective_ps_cpu(cpu) / (self.ps_cpu_per_step * share)

    def ps_cpu_for(self, steps_per_sec: float, share: float) -> float:
        effective = steps_per_sec * self.ps_cpu_per_step * share
        if effective <= self.ps_knee_cpu:
            return effective
        return self.ps_knee_cpu + (effective - self.ps_knee_cpu) / self.ps_gain_past_knee
