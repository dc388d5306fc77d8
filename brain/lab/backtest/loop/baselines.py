"""What a platform does without Brain, stepped through the same harness.

- ``request``: the request as given, for the whole run; an OOM kill restarts it as it was.
- one-shot rules (``max_last7``, ``p90_last7``): a size from the last runs' peaks times a
  margin, fixed for the run; an OOM kill restarts the run at its request as given (the
  owner's own size). No history: the request.
- ``vpa_like``: a Vertical Pod Autoscaler: target = p90 of the workload's samples of the
  last 8 days (the earlier runs' and this run's so far, in VPA's histogram of buckets
  5 % apart, read at a bucket's upper edge) x margin; bounds p50 and p95 x margin.
  When the allocation leaves its bounds the pod is evicted and relaunched at the
  target (a migration). An OOM kill restarts it at max(+100 MiB, x 1.2), which stays a
  floor of its memory target for the rest of the run.
- ``autopilot_like``: Autopilot's moving window: at every decision, the peak of the last
  ``window`` of the workload's samples x margin, resized in place (Borg changes limits
  without a restart). An OOM kill bumps memory as VPA does and the bump stays a floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from brain.lab.backtest.baselines import LastRunsRule
from brain.replay.harness import Allocation, Change, RunSamples, requested
from brain.replay.runs import Run
from brain.replay.series import RunSeries

VPA_HISTORY_S = 8 * 86400
OOM_BUMP_MIB = 100.0
OOM_BUMP_FACTOR = 1.2


def oom_bump(memory_mib: float) -> float:
    """VPA's memory after an OOM kill: max(+100 MiB, x 1.2)."""
    return max(memory_mib + OOM_BUMP_MIB, memory_mib * OOM_BUMP_FACTOR)


@dataclass
class Fixed:
    """A size held for the whole run; an OOM kill restarts at ``after_oom`` (None: same)."""

    size: Allocation
    after_oom: Allocation | None = None

    def start(self) -> Allocation:
        return self.size

    def next_change(self, low: int, high: int, current: Allocation) -> Change | None:
        return None

    def on_oom(self, at: int, current: Allocation) -> Allocation:
        return self.after_oom if self.after_oom is not None else current


@dataclass(frozen=True)
class RequestLoop:
    name: str = "request"

    def policy(self, run: Run, history: Sequence[Run], samples: RunSamples, series: RunSeries):
        return Fixed(requested(run))


@dataclass(frozen=True)
class OneShotLoop:
    """A simple rule sized once from the last runs' peaks (memory peak, CPU p95)."""

    rule: LastRunsRule

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def family(self) -> str:
        return self.rule.family

    def policy(self, run: Run, history: Sequence[Run], samples: RunSamples, series: RunSeries):
        sizes = self.rule.recommend(run.submission, history)
        request = requested(run)
        size = Allocation(
            sizes.get("memory") or request.memory_mib, sizes.get("cpu") or request.cpu
        )
        return Fixed(size, after_oom=requested(run, fallback=size))


# VPA keeps usage in histograms of exponentially growing buckets (5 % apart); a
# percentile is read as the upper edge of the bucket it falls in.
BUCKET_RATIO = 1.05
MEMORY_EDGES = 1.0 * BUCKET_RATIO ** np.arange(300)  # 1 MiB .. about 2 TiB
CPU_EDGES = 0.001 * BUCKET_RATIO ** np.arange(250)  # 0.001 .. about 200 cores
VPA_QUANTILES = (0.5, 0.9, 0.95)  # lower bound, target, upper bound


def running_quantiles(
    history: np.ndarray, run: np.ndarray, edges: np.ndarray, quantiles: Sequence[float]
) -> np.ndarray:
    """Per sample ``k`` of ``run`` and per quantile, the histogram percentile of
    ``history`` and ``run[: k + 1]``: shape (len(run), len(quantiles))."""
    buckets = len(edges)
    known = np.bincount(
        np.minimum(np.searchsorted(edges, history, side="left"), buckets - 1), minlength=buckets
    )
    counts = np.zeros((len(run), buckets))
    where = np.minimum(np.searchsorted(edges, run, side="left"), buckets - 1)
    counts[np.arange(len(run)), where] = 1.0
    counts = np.cumsum(counts, axis=0) + known
    cumulative = np.cumsum(counts, axis=1)
    total = cumulative[:, -1:]
    found = np.empty((len(run), len(quantiles)))
    for column, q in enumerate(quantiles):
        found[:, column] = edges[np.argmax(cumulative >= q * total, axis=1)]
    return found


class VpaPolicy:
    """Bounds and target per sample, precomputed; the floor is the last OOM bump."""

    def __init__(
        self,
        samples: RunSamples,
        memory: np.ndarray,  # per sample: p50, p90, p95 of memory (MiB)
        cpu: np.ndarray,  # the same of CPU (cores)
        margin: float,
        start: Allocation,
    ) -> None:
        self._samples = samples
        self._memory = memory * margin
        self._cpu = cpu * margin
        self._start = start
        self._floor = 0.0

    def start(self) -> Allocation:
        return self._start

    def next_change(self, low: int, high: int, current: Allocation) -> Change | None:
        memory = self._memory[low:high]
        cpu = self._cpu[low:high]
        memory_high = np.maximum(memory[:, 2], self._floor)
        outside = (
            (current.memory_mib < memory[:, 0])
            | (current.memory_mib > memory_high)
            | (current.cpu < cpu[:, 0])
            | (current.cpu > cpu[:, 2])
        )
        for offset in np.flatnonzero(outside & self._samples.decides[low:high]):
            k = int(offset)
            target = Allocation(max(float(memory[k, 1]), self._floor), float(cpu[k, 1]))
            if target != current:
                return Change(low + k, target, restarts=True)
        return None

    def on_oom(self, at: int, current: Allocation) -> Allocation:
        self._floor = oom_bump(current.memory_mib)
        return Allocation(self._floor, current.cpu)


class VpaLoop:
    """VPA's recommender at one margin; its percentiles are shared by every margin."""

    family = "vpa_like"
    # The percentiles of the run last asked, for the next margin on the same run.
    _cache: tuple[tuple[int, int], np.ndarray, np.ndarray, np.ndarray | None] | None = None

    def __init__(self, margin: float = 1.15) -> None:
        self.margin = margin

    @property
    def name(self) -> str:
        return f"vpa_like_x{self.margin:g}"

    def policy(self, run: Run, history: Sequence[Run], samples: RunSamples, series: RunSeries):
        memory, cpu, before = self._percentiles(run, history, samples, series)
        if before is None:
            start = requested(run)
        else:
            start = Allocation(before[0] * self.margin, before[1] * self.margin)
        return VpaPolicy(samples, memory, cpu, self.margin, start)

    @classmethod
    def _percentiles(cls, run: Run, history: Sequence[Run], samples: RunSamples, series):
        key = (id(series), run.index)
        if cls._cache is not None and cls._cache[0] == key:
            return cls._cache[1:]
        mine = series.bounds(run.index)[0]
        first = series.bounds(history[0].index)[0] if history else mine
        since = int(run.submission.start.timestamp()) - VPA_HISTORY_S
        low = first + int(np.searchsorted(series.ts[first:mine], since, side="left"))
        past_memory, past_cpu = series.mem[low:mine], series.cpu[low:mine]
        memory = running_quantiles(past_memory, samples.mem, MEMORY_EDGES, VPA_QUANTILES)
        cpu = running_quantiles(past_cpu, samples.cpu, CPU_EDGES, VPA_QUANTILES)
        before = None
        if len(past_memory):
            before = (
                _histogram_quantile(past_memory, MEMORY_EDGES, 0.9),
                _histogram_quantile(past_cpu, CPU_EDGES, 0.9),
            )
        cls._cache = (key, memory, cpu, before)
        return memory, cpu, before


def _histogram_quantile(values: np.ndarray, edges: np.ndarray, q: float) -> float:
    buckets = len(edges)
    counts = np.bincount(
        np.minimum(np.searchsorted(edges, values, side="left"), buckets - 1), minlength=buckets
    )
    cumulative = np.cumsum(counts)
    return float(edges[np.argmax(cumulative >= q * cumulative[-1])])


class WindowPolicy:
    """Peak of the window x margin at every decision, in place; VPA's bump after an OOM."""

    def __init__(
        self, samples: RunSamples, memory: np.ndarray, cpu: np.ndarray, start: Allocation
    ) -> None:
        self._samples = samples
        self._memory = memory  # window peak x margin as decided on each sample
        self._cpu = cpu
        self._start = start
        self._floor = 0.0

    def start(self) -> Allocation:
        return self._start

    def next_change(self, low: int, high: int, current: Allocation) -> Change | None:
        memory = np.maximum(self._memory[low:high], self._floor)
        cpu = self._cpu[low:high]
        differs = self._samples.decides[low:high] & (
            (memory != current.memory_mib) | (cpu != current.cpu)
        )
        found = np.flatnonzero(differs)
        if not found.size:
            return None
        k = int(found[0])
        return Change(low + k, Allocation(float(memory[k]), float(cpu[k])), restarts=False)

    def on_oom(self, at: int, current: Allocation) -> Allocation:
        self._floor = oom_bump(current.memory_mib)
        return Allocation(self._floor, current.cpu)


class AutopilotLoop:
    """The moving window over the workload's samples; its peaks are computed once."""

    family = "autopilot_like"
    # Window peaks per (series, window length), shared by every margin of that window.
    _windows: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}

    def __init__(self, window_h: float = 24.0, margin: float = 1.15) -> None:
        self.window_h = window_h
        self.margin = margin
        self._peaks: tuple[int, np.ndarray, np.ndarray] | None = None

    @property
    def name(self) -> str:
        return f"autopilot_like_w{self.window_h:g}h_x{self.margin:g}"

    def prepare(self, series: RunSeries, workload_starts: Sequence[int]) -> None:
        """Window peaks of every sample; ``workload_starts`` are the flat indices where
        each workload's samples begin (windows never cross them)."""
        key = (id(series), self.window_h)
        shared = AutopilotLoop._windows.get(key)
        if shared is not None:
            self._peaks = (id(series), *shared)
            return
        memory = np.empty_like(series.mem)
        cpu = np.empty_like(series.cpu)
        edges = [*workload_starts, series.samples]
        window = f"{int(self.window_h * 3600)}s"
        for low, high in zip(edges[:-1], edges[1:], strict=True):
            if high <= low:
                continue
            index = pd.to_datetime(series.ts[low:high], unit="s")
            frame = pd.DataFrame(
                {"mem": series.mem[low:high], "cpu": series.cpu[low:high]}, index=index
            )
            rolled = frame.rolling(window).max()
            memory[low:high] = rolled["mem"].to_numpy()
            cpu[low:high] = rolled["cpu"].to_numpy()
        AutopilotLoop._windows = {key: (memory, cpu)} | {
            k: v for k, v in AutopilotLoop._windows.items() if k[0] == id(series)
        }
        self._peaks = (id(series), memory, cpu)

    def policy(self, run: Run, history: Sequence[Run], samples: RunSamples, series: RunSeries):
        if self._peaks is None or self._peaks[0] != id(series):
            raise RuntimeError("AutopilotLoop.prepare must see the series first")
        _, memory, cpu = self._peaks
        low, high = series.bounds(run.index)
        request = requested(run)
        first = series.bounds(history[0].index)[0] if history else low
        window_s = self.window_h * 3600
        start = request
        if low > first and len(samples) and samples.ts[0] - series.ts[low - 1] < window_s:
            start = Allocation(memory[low - 1] * self.margin, cpu[low - 1] * self.margin)
        return WindowPolicy(
            samples, memory[low:high] * self.margin, cpu[low:high] * self.margin, start
        )
