"""A whole backtest over a normalized run table: the figures, the knob curves and, with a
tuning and a scored period, the knobs chosen out of time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from brain.lab.backtest import learned, lineup, tuning
from brain.lab.backtest.engine import ProgressCallback, Replay, replay
from brain.lab.backtest.metrics import Curve, CurvePoint, Row, evaluate
from brain.lab.backtest.periods import Period
from brain.lab.backtest.tuning import Choice, Dominance
from brain.optimizing import OptimizerRegistry
from brain.replay.runs import Recommender

# Makes the progress callback of one replay from its label; returns None for no progress.
ProgressFactory = Callable[[str, int], ProgressCallback | None]


@dataclass(frozen=True)
class Options:
    min_history: int = 3
    k: int = 7  # runs the simple rules look back on
    margin: float = 1.15  # the simple rules' margin
    sweep: bool = False  # also replay every knob value, for the chart
    tune_on: Period | None = None  # knobs are chosen on these runs...
    score_on: Period | None = None  # ...and figures reported on these (default: all runs)
    targets: dict[str, float] = field(default_factory=lambda: dict(tuning.DEFAULT_TARGETS))
    challengers: tuple[str, ...] = ("learned_margin", learned.NAME)  # must beat the rules
    learned: bool = True  # also train and score the learned recommender (learned_peak)


@dataclass
class BacktestResult:
    """What one backtest found: the figures per recommender and resource, and what
    tuning, calibration and training produced on the way."""

    rows: list[Row]
    runs: int
    workloads: int
    scored_runs: int = 0
    curves: list[Curve] = field(default_factory=list)
    choices: list[Choice] = field(default_factory=list)
    dominance: list[Dominance] = field(default_factory=list)
    calibration: list[learned.CalibrationRow] = field(default_factory=list)
    model: learned.PeakModel | None = None  # the learned recommender as trained here


@dataclass(frozen=True)
class Precomputed:
    """A sweep member whose sizes are computed in one batch rather than replayed."""

    name: str
    resources: frozenset[str]


@dataclass(frozen=True)
class Member:
    """One knob value of a sweep, as a recommender."""

    sweep: lineup.Sweep
    value: float
    recommender: Recommender | Precomputed


def backtest(
    table: pd.DataFrame,
    registry: OptimizerRegistry,
    options: Options,
    progress: ProgressFactory | None = None,
) -> BacktestResult:
    recommenders = lineup.standard(registry, k=options.k, margin=options.margin)
    result = replay(table, recommenders, _progress(progress, "replay", len(table)))
    scored = _mask(table, options.score_on)
    model = None
    if options.learned:
        # Trained on the tuning period (out of time), else on every run (in-sample).
        model = learned.fit(table, _mask(table, options.tune_on))
        learned.add_sizes(result, model, table, sweep=False)
    outcome = BacktestResult(
        rows=evaluate(table, result, options.min_history, scored),
        runs=len(table),
        workloads=int(table["workload"].nunique()),
        scored_runs=int(scored.sum()),
    )
    if model is not None:
        outcome.model = model.model
        outcome.calibration = learned.calibration(
            model, table, scored & (result.history_len >= options.min_history)
        )
    if options.sweep or options.tune_on is not None:
        members = _members(registry, options)
        replayed = [m for m in members if not isinstance(m.recommender, Precomputed)]
        swept = replay(
            table,
            [m.recommender for m in replayed],
            _progress(progress, "knob sweep", len(table)),
        )
        if model is not None:
            learned.add_sizes(swept, model, table, sweep=True)
            members += _learned_members(model)
        outcome.curves = curves(members, evaluate(table, swept, options.min_history, scored))
        outcome.dominance = [
            d for name in options.challengers for d in tuning.dominance(outcome.curves, name)
        ]
        if options.tune_on is not None:
            members = replayed  # the learned risk is stated, not tuned
            outcome.choices = _choose(table, members, swept, scored, options)
            outcome.rows += [
                Row(choice.name, choice.resource, choice.scored, choice.scored_cold_start)
                for choice in outcome.choices
            ]
    return outcome


def curves(members: list[Member], rows: list[Row]) -> list[Curve]:
    """The warm figures ``rows`` of the sweep ``members`` as one curve per family and resource."""
    figures = {(row.name, row.resource): row.warm for row in rows}
    found = []
    for sweep in dict.fromkeys(m.sweep for m in members):
        mine = [m for m in members if m.sweep is sweep]
        for resource in sorted({res for m in mine for res in m.recommender.resources}):
            points = tuple(
                CurvePoint(m.value, f.alloc_used, f.under_rate)
                for m in mine
                if (f := figures.get((m.recommender.name, resource))) is not None
                and f.alloc_used is not None
                and f.under_rate is not None
            )
            if points:
                found.append(Curve(sweep.family, sweep.knob, resource, points))
    return found


def _members(registry: OptimizerRegistry, options: Options) -> list[Member]:
    return [
        Member(sweep, value, sweep.make(value))
        for sweep in lineup.sweeps(registry, k=options.k)
        for value in sweep.values
    ]


def _learned_members(model: learned.Learned) -> list[Member]:
    sweep = lineup.Sweep(learned.NAME, learned.KNOB, learned.RISKS, make=None)
    resources = frozenset(model.forecasts)
    return [
        Member(sweep, risk, Precomputed(learned.member_name(risk), resources))
        for risk in learned.RISKS
    ]


def _choose(
    table: pd.DataFrame,
    members: list[Member],
    swept: Replay,
    scored: np.ndarray,
    options: Options,
) -> list[Choice]:
    """Per family and resource, the knob value picked on the tuning period."""
    tuned = _by_key(evaluate(table, swept, options.min_history, _mask(table, options.tune_on)))
    on_score = _by_key(evaluate(table, swept, options.min_history, scored))
    choices = []
    for sweep in dict.fromkeys(m.sweep for m in members):
        mine = [m for m in members if m.sweep is sweep]
        for resource in sorted({res for m in mine for res in m.recommender.resources}):
            target = options.targets.get(resource)
            keyed = [(m, (m.recommender.name, resource)) for m in mine]
            points = [(m.value, tuned[key].warm) for m, key in keyed if key in tuned]
            value = None if target is None else tuning.choose(points, target)
            if value is None:
                continue
            key = next(key for m, key in keyed if m.value == value)
            choices.append(
                Choice(
                    sweep.family,
                    sweep.knob,
                    resource,
                    value,
                    target,
                    tuned[key].warm,
                    on_score[key].warm,
                    on_score[key].cold_start,
                )
            )
    return choices


def _by_key(rows: list[Row]) -> dict[tuple[str, str], Row]:
    return {(row.name, row.resource): row for row in rows}


def _mask(table: pd.DataFrame, period: Period | None) -> np.ndarray:
    if period is None:
        return np.ones(len(table), dtype=bool)
    return period.mask(table["start"])


def _progress(factory: ProgressFactory | None, label: str, total: int) -> ProgressCallback | None:
    return None if factory is None else factory(label, total)
