"""A whole backtest over a normalized run table: the figures, and the knob curves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from brain.backtest import lineup
from brain.backtest.engine import ProgressCallback, replay
from brain.backtest.metrics import Curve, CurvePoint, Row, evaluate
from brain.optimizing import OptimizerRegistry

# Makes the progress callback of one replay from its label; returns None for no progress.
ProgressFactory = Callable[[str, int], ProgressCallback | None]


@dataclass(frozen=True)
class Options:
    min_history: int = 3
    k: int = 7  # runs the simple rules look back on
    margin: float = 1.15  # the simple rules' margin
    sweep: bool = False  # also replay every knob value, for the chart


@dataclass
class Outcome:
    rows: list[Row]
    runs: int
    workloads: int
    curves: list[Curve] = field(default_factory=list)


def backtest(
    table: pd.DataFrame,
    registry: OptimizerRegistry,
    options: Options,
    progress: ProgressFactory | None = None,
) -> Outcome:
    recommenders = lineup.standard(registry, k=options.k, margin=options.margin)
    result = replay(table, recommenders, _progress(progress, "replay", len(table)))
    outcome = Outcome(
        rows=evaluate(table, result, options.min_history),
        runs=len(table),
        workloads=int(table["workload"].nunique()),
    )
    if options.sweep:
        outcome.curves = sweep_curves(table, registry, options, progress)
    return outcome


def sweep_curves(
    table: pd.DataFrame,
    registry: OptimizerRegistry,
    options: Options,
    progress: ProgressFactory | None = None,
) -> list[Curve]:
    """Every knob value of every sweep replayed at once; one curve per family and resource."""
    sweeps = lineup.sweeps(registry, k=options.k)
    members = [(sweep, value, sweep.make(value)) for sweep in sweeps for value in sweep.values]
    result = replay(
        table, [m for _, _, m in members], _progress(progress, "knob sweep", len(table))
    )
    figures = {
        (row.name, row.resource): row.warm for row in evaluate(table, result, options.min_history)
    }
    curves = []
    for sweep in sweeps:
        by_value = [(value, m) for s, value, m in members if s is sweep]
        for resource in sorted({res for _, m in by_value for res in m.resources}):
            points = tuple(
                CurvePoint(value, f.alloc_used, f.under_rate)
                for value, m in by_value
                if (f := figures.get((m.name, resource))) is not None
                and f.alloc_used is not None
                and f.under_rate is not None
            )
            if points:
                curves.append(Curve(sweep.family, sweep.knob, resource, points))
    return curves


def _progress(factory: ProgressFactory | None, label: str, total: int) -> ProgressCallback | None:
    return None if factory is None else factory(label, total)
