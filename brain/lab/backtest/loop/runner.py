"""The replay through the loop: every run, in time order, under every recommender.

Runs are taken per workload in the order of the normalized run table; a run's
history is its workload's earlier runs (as in ``brain backtest``). With a tuning and
a scored period, each family's knob is chosen on the tuning period's runs and its
figures are reported on the scored period's (``choose``); curves and the dominance
of Brain's curve are the scored period's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np
import pandas as pd

from brain.lab.backtest.loop.figures import LoopFigures, Outcomes, figures
from brain.replay.harness import HarnessSettings, run_samples, simulate
from brain.replay.runs import runs_of
from brain.replay.series import RunSeries

# Called with the number of runs replayed so far.
Progress = Callable[[int], None]
# OOM kills per 1,000 run-hours and throttled share a knob is tuned to by default.
DEFAULT_OOM_TARGET = 1.0
DEFAULT_THROTTLE_TARGET = 0.01


def replay_runs(
    table: pd.DataFrame,
    series: RunSeries,
    recommenders: Sequence,
    harness: HarnessSettings,
    progress: Progress | None = None,
) -> dict[str, Outcomes]:
    """Each recommender's outcome of every run of ``table``."""
    names = [r.name for r in recommenders]
    if len(set(names)) != len(names):
        raise ValueError(f"recommender names must be unique: {names}")
    runs = runs_of(table)
    starts = []
    for _, group in groupby(runs, key=lambda run: run.submission.workload):
        starts.append(series.bounds(next(group).index)[0])
    for recommender in recommenders:
        prepare = getattr(recommender, "prepare", None)
        if prepare is not None:
            prepare(series, starts)
    result = {name: Outcomes.empty(len(table)) for name in names}
    done = 0
    for _, group in groupby(runs, key=lambda run: run.submission.workload):
        mine = list(group)
        for position, run in enumerate(mine):
            samples = run_samples(series, run.index, harness)
            history = mine[:position]
            for recommender in recommenders:
                policy = recommender.policy(run, history, samples, series)
                result[recommender.name].put(run.index, simulate(samples, policy, harness))
        done += len(mine)
        if progress is not None:
            progress(done)
    return result


@dataclass(frozen=True)
class Point:
    """One knob value of a family on the scored period."""

    name: str
    figures: LoopFigures


@dataclass(frozen=True)
class Choice:
    family: str
    resource: str  # memory or cpu
    name: str  # the recommender (knob value) chosen
    tuned: LoopFigures
    scored: LoopFigures


@dataclass
class LoopOutcome:
    rows: list[tuple[str, LoopFigures]]
    runs: int
    workloads: int
    scored_runs: int
    curves: dict[str, list[Point]] = field(default_factory=dict)
    choices: list[Choice] = field(default_factory=list)


def figures_of(
    table: pd.DataFrame, outcomes: dict[str, Outcomes], mask: np.ndarray
) -> dict[str, LoopFigures]:
    memory = table["req_memory_mib"].to_numpy(dtype=float)
    cpu = table["req_cpu"].to_numpy(dtype=float)
    return {name: figures(o, memory, cpu, mask) for name, o in outcomes.items()}


def choose(
    members: Sequence,
    tuned: dict[str, LoopFigures],
    scored: dict[str, LoopFigures],
    oom_target: float = DEFAULT_OOM_TARGET,
    throttle_target: float = DEFAULT_THROTTLE_TARGET,
) -> list[Choice]:
    """Per family: for memory the member with the fewest allocated memory-hours among
    those at or below ``oom_target`` OOM kills per 1,000 run-hours on the tuning period
    (none: the fewest kills); for CPU the fewest core-hours at or below
    ``throttle_target`` throttled share (none: the least throttled)."""
    found = []
    for family in dict.fromkeys(m.family for m in members):
        names = [m.name for m in members if m.family == family]
        memory = _pick(
            [(tuned[n].ooms_per_1000h, tuned[n].memory_gib_h, n) for n in names], oom_target
        )
        cpu = _pick(
            [(tuned[n].throttled_share, tuned[n].core_h, n) for n in names], throttle_target
        )
        for resource, name in (("memory", memory), ("cpu", cpu)):
            if name is not None:
                found.append(Choice(family, resource, name, tuned[name], scored[name]))
    return found


def _pick(points: list[tuple[float | None, float, str]], target: float) -> str | None:
    known = [(risk, cost, name) for risk, cost, name in points if risk is not None]
    if not known:
        return None
    meeting = [(cost, name) for risk, cost, name in known if risk <= target]
    if meeting:
        return min(meeting)[1]
    return min(known)[2]


def above(mine: list[Point], theirs: list[Point]) -> tuple[int, int, list[str]]:
    """How many of ``theirs`` points Brain's curve ``mine`` is at or above: for each, some
    point of ``mine`` with at most its OOM rate saves at least as much memory."""
    beaten = []
    missed = []
    for point in theirs:
        rate, saved = point.figures.ooms_per_1000h, point.figures.memory_saved
        if rate is None or saved is None:
            continue
        best = [
            p.figures.memory_saved
            for p in mine
            if p.figures.ooms_per_1000h is not None
            and p.figures.memory_saved is not None
            and p.figures.ooms_per_1000h <= rate
        ]
        (beaten if best and max(best) >= saved else missed).append(point.name)
    return len(beaten), len(beaten) + len(missed), missed
