"""The `comm-bound` family: Amdahl twice over, and a network that fills up.

- Within a worker, ``thread_serial`` of a mini-batch's compute runs on one thread:
  at ``c`` of the ``worker_cpu_needed`` cores it takes ``s + (1 - s) x need / c`` of
  its time at full CPU (Amdahl's law on threads).
- Each step also exchanges the model with the PS: ``comm_s x x + contention_s x x^2``
  seconds, ``x`` the workers per PS (``n / p``): the PS's links are shared by the
  workers they serve, and past a point they queue. More PS (not more PS CPU) shorten it.
- Across workers, ``serial_fraction`` of each step is serial (the chief's bookkeeping,
  the barrier): ``m`` workers' worth of raw throughput gives ``m / (1 + sigma (m - 1))``.
- The PS tier costs ``ps_cpu_per_step`` core-seconds per step, as in the measured family.

A worker waiting on the network does not compute: its CPU use is its compute time over
its step time, so a comm-bound job's workers look idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from brain.lab.simulation.families.base import FamilyModel, linear_ps_cpu, linear_ps_rate


@dataclass(frozen=True)
class CommBoundModel(FamilyModel):
    per_worker_steps_per_sec: float  # one worker alone, at full CPU, without the network
    worker_cpu_needed: float
    thread_serial: float
    comm_s: float
    contention_s: float
    serial_fraction: float
    ps_cpu_per_step: float
    family: str = "comm-bound"

    @property
    def compute_s(self) -> float:
        return 1.0 / self.per_worker_steps_per_sec

    def worker_factor(self, cpu: float) -> float:
        if cpu <= 0:
            return 0.0
        cores = min(cpu, self.worker_cpu_needed)
        s = self.thread_serial
        return 1.0 / (s + (1 - s) * self.worker_cpu_needed / cores)

    def comm_time_s(self, workers: int, ps_count: int) -> float:
        x = workers / max(ps_count, 1)
        return self.comm_s * x + self.contention_s * x * x

    def _step_times(self, weights: Sequence[float], ps_count: int) -> list[float | None]:
        comm = self.comm_time_s(len(weights), ps_count)
        return [self.compute_s / w + comm if w > 0 else None for w in weights]

    def _serial(self, raw: float) -> float:
        """Amdahl across workers: raw steps/s over ``1 + sigma (m - 1)``, ``m`` the raw
        throughput in single workers."""
        m = raw * self.compute_s
        return 1.0 / (1.0 + self.serial_fraction * max(m - 1.0, 0.0))

    def workers_speed(self, weights: Sequence[float], ps_count: int) -> list[float]:
        raw = [1.0 / t if t else 0.0 for t in self._step_times(weights, ps_count)]
        factor = self._serial(sum(raw))
        return [r * factor for r in raw]

    def worker_busy(self, weights: Sequence[float], ps_count: int) -> list[float]:
        return [
            self.compute_s / w / t if t else 0.0
            for w, t in zip(weights, self._step_times(weights, ps_count), strict=True)
        ]

    def uniform_speed(self, workers: int, weight: float, ps_count: int) -> float:
        if workers <= 0 or weight <= 0:
            return 0.0
        raw = workers / (self.compute_s / weight + self.comm_time_s(workers, ps_count))
        return raw * self._serial(raw)

    def ps_rate(self, cpu: float, share: float) -> float:
        return linear_ps_rate(cpu, share, self.ps_cpu_per_step)

    def ps_cpu_for(self, steps_per_sec: float, share: float) -> float:
        return linear_ps_cpu(steps_per_sec, share, self.ps_cpu_per_step)
