"""One run stepped through its usage series as a job master would run it.

The policy (a recommender's behaviour over a run) gives the size the run starts with,
then, at the master's cadence, may change it; the harness applies every change and
kills the run whenever memory use exceeds its allocation:

- sample ``k`` stands for the ``sample_s`` seconds ending at ``ts[k]`` and is used
  at the allocation in force then; a decision taken on sample ``k`` (it sees samples
  up to ``k``) takes effect from sample ``k + 1``;
- memory used above the allocation is an OOM kill at that sample: the run restarts
  at the policy's answer and loses its progress since its last checkpoint
  (checkpoints every ``checkpoint_s`` of a (re)started run's time); no decision is
  taken on the sample it was killed at;
- a resize that is a migration (a new pod) is a restart too, with the same loss, when
  ``migration_restarts``; an in-place resize is not;
- CPU used above the allocation is throttled time, not a kill.

The series goes on in its own time after a restart: the lost progress is re-run later,
and its allocation is counted (``rework``) at the size after the restart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:  # the series loader needs pandas; the harness does not
    from brain.replay.runs import Run
    from brain.replay.series import RunSeries


@dataclass(frozen=True)
class HarnessSettings:
    cadence_s: float = 300.0  # how often the master runs the running stage
    checkpoint_s: float = 1800.0  # progress is saved this often
    migration_restarts: bool = True  # a migration relaunches the pod


@dataclass(frozen=True)
class Allocation:
    memory_mib: float
    cpu: float


@dataclass(frozen=True)
class Change:
    """A decision on sample ``at``: the allocation from sample ``at + 1`` on."""

    at: int
    allocation: Allocation
    restarts: bool  # a migration (relaunch), not an in-place resize


@dataclass(frozen=True)
class RunSamples:
    """One run's samples (views into ``RunSeries``) and where its decisions fall."""

    ts: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    decides: np.ndarray  # bool per sample: the master runs the running stage on it
    sample_s: float

    def __len__(self) -> int:
        return len(self.ts)


class RunPolicy(Protocol):
    """A recommender's behaviour over one run."""

    def start(self) -> Allocation: ...

    def next_change(self, low: int, high: int, current: Allocation) -> Change | None:
        """The first decision on samples ``low..high-1`` that changes ``current``."""

    def on_oom(self, at: int, current: Allocation) -> Allocation:
        """The size the run restarts with after an OOM kill on sample ``at``."""


@dataclass
class RunOutcome:
    """What a run cost and suffered; hours are run time (sample count x ``sample_s``)."""

    hours: float = 0.0
    memory_gib_h: float = 0.0  # allocated, rework included
    memory_used_gib_h: float = 0.0
    core_h: float = 0.0  # allocated, rework included
    cores_used_h: float = 0.0
    ooms: int = 0
    migrations: int = 0  # resizes that relaunched the pod
    resizes: int = 0  # every change of allocation, in place or not
    lost_h: float = 0.0  # progress lost to restarts
    throttled_h: float = 0.0  # CPU used above its allocation
    memory_peak_alloc_mib: float = 0.0

    @property
    def restarts(self) -> int:
        return self.ooms + self.migrations


def requested(run: Run, fallback: Allocation | None = None) -> Allocation:
    """The run's request as given; a resource it does not give keeps ``fallback``'s size."""
    job = run.submission
    memory = job.req_memory_mib
    cpu = job.req_cpu
    if memory is None:
        memory = fallback.memory_mib if fallback is not None else float("inf")
    if cpu is None:
        cpu = fallback.cpu if fallback is not None else float("inf")
    return Allocation(memory, cpu)


def decision_mask(ts: np.ndarray, cadence_s: float) -> np.ndarray:
    """The samples the master decides on: the first of every cadence tick since the run's
    first sample."""
    if len(ts) == 0:
        return np.zeros(0, dtype=bool)
    tick = (ts - ts[0]) // max(int(cadence_s), 1)
    mask = np.ones(len(ts), dtype=bool)
    mask[1:] = tick[1:] != tick[:-1]
    return mask


def run_samples(series: RunSeries, run: int, settings: HarnessSettings) -> RunSamples:
    low, high = series.bounds(run)
    ts = series.ts[low:high]
    return RunSamples(
        ts=ts,
        cpu=series.cpu[low:high],
        mem=series.mem[low:high],
        decides=decision_mask(ts, settings.cadence_s),
        sample_s=series.sample_s,
    )


def simulate(samples: RunSamples, policy: RunPolicy, settings: HarnessSettings) -> RunOutcome:
    """Step ``samples`` through ``policy`` (see the module docstring)."""
    n = len(samples)
    outcome = RunOutcome(hours=n * samples.sample_s / 3600.0)
    if n == 0:
        return outcome
    hours_per_sample = samples.sample_s / 3600.0
    current = policy.start()
    outcome.memory_peak_alloc_mib = current.memory_mib
    # The run's clock starts one sample before its first sample ends.
    segment_start = float(samples.ts[0]) - samples.sample_s
    low = 0
    while low < n:
        over = np.flatnonzero(samples.mem[low:] > current.memory_mib)
        killed = low + int(over[0]) if over.size else None
        until = killed if killed is not None else n
        change = policy.next_change(low, until, current) if low < until else None
        stop = change.at + 1 if change is not None else (killed + 1 if killed is not None else n)
        _account(outcome, samples, low, stop, current, hours_per_sample)
        if change is not None:
            outcome.resizes += 1
            if change.restarts and settings.migration_restarts:
                outcome.migrations += 1
                before = outcome.lost_h
                segment_start = _restart(outcome, samples, change.at, segment_start, settings)
                _rework(outcome, change.allocation, outcome.lost_h - before)
            current = change.allocation
        elif killed is not None:
            outcome.ooms += 1
            before = outcome.lost_h
            segment_start = _restart(outcome, samples, killed, segment_start, settings)
            current = policy.on_oom(killed, current)
            _rework(outcome, current, outcome.lost_h - before)
        outcome.memory_peak_alloc_mib = max(outcome.memory_peak_alloc_mib, current.memory_mib)
        low = stop
    return outcome


def _account(
    outcome: RunOutcome,
    samples: RunSamples,
    low: int,
    high: int,
    current: Allocation,
    hours_per_sample: float,
) -> None:
    count = high - low
    if count <= 0:
        return
    mem = samples.mem[low:high]
    cpu = samples.cpu[low:high]
    outcome.memory_gib_h += current.memory_mib * count * hours_per_sample / 1024.0
    outcome.memory_used_gib_h += float(mem.sum()) * hours_per_sample / 1024.0
    outcome.core_h += current.cpu * count * hours_per_sample
    outcome.cores_used_h += float(cpu.sum()) * hours_per_sample
    outcome.throttled_h += int(np.count_nonzero(cpu > current.cpu)) * hours_per_sample


def _restart(
    outcome: RunOutcome,
    samples: RunSamples,
    at: int,
    segment_start: float,
    settings: HarnessSettings,
) -> float:
    """Counts the progress lost by a restart on sample ``at``; the new segment's start."""
    now = float(samples.ts[at])
    ran = max(now - segment_start, 0.0)
    checkpoint = settings.checkpoint_s
    lost = ran - math.floor(ran / checkpoint) * checkpoint if checkpoint > 0 else 0.0
    outcome.lost_h += lost / 3600.0
    return now


def _rework(outcome: RunOutcome, size: Allocation, lost_h: float) -> None:
    """The allocation of re-running ``lost_h`` hours of lost progress at ``size``."""
    outcome.memory_gib_h += size.memory_mib * lost_h / 1024.0
    outcome.core_h += size.cpu * lost_h
