"""``brain backtest --replay``: the runs' usage series stepped through Brain's loop and the
baselines, with the figures of ``figures``."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from brain.backtest.loop import lineup, report
from brain.backtest.loop.harness import HarnessSettings
from brain.backtest.loop.runner import LoopOutcome, Point, choose, figures_of, replay_runs
from brain.backtest.loop.series import RunSeries, attach, period_of, read_series
from brain.backtest.periods import Period
from brain.backtest.progress import ProgressBar
from brain.config import Settings
from brain.optimizing import load_registry


def harness_from_args(args: argparse.Namespace) -> HarnessSettings:
    return HarnessSettings(
        cadence_s=args.cadence_min * 60.0,
        checkpoint_s=args.checkpoint_min * 60.0,
        migration_restarts=not args.migration_in_place,
    )


def load_trace_series(args: argparse.Namespace, table: pd.DataFrame) -> RunSeries:
    samples = read_series(args.series)
    sample_s = (args.sample_minutes or 5.0) * 60.0
    return attach(table, samples, period_s=period_of(args.trace), sample_s=sample_s)


def run_loop(
    table: pd.DataFrame,
    series: RunSeries,
    args: argparse.Namespace,
    tune_on: Period | None,
    score_on: Period | None,
) -> LoopOutcome:
    settings = Settings()
    registry = load_registry()
    harness = harness_from_args(args)
    members = lineup.standard(registry, settings, k=args.k, margin=args.margin)
    if tune_on is not None:
        known = {m.name for m in members}
        members += [m for m in lineup.sweeps(registry, settings, k=args.k) if m.name not in known]

    bar = ProgressBar(len(table), "replay", quiet=args.quiet)
    outcomes = replay_runs(table, series, members, harness, bar)
    scored = _mask(table, score_on)
    on_score = figures_of(table, outcomes, scored)
    standard = {m.name for m in lineup.standard(registry, settings, k=args.k, margin=args.margin)}
    outcome = LoopOutcome(
        rows=[(m.name, on_score[m.name]) for m in members if m.name in standard],
        runs=len(table),
        workloads=int(table["workload"].nunique()),
        scored_runs=int(scored.sum()),
    )
    if tune_on is not None:
        on_tune = figures_of(table, outcomes, _mask(table, tune_on))
        swept = [m for m in members if hasattr(m, "family")]
        outcome.choices = choose(swept, on_tune, on_score, args.oom_target, args.throttle_target)
        for member in swept:
            outcome.curves.setdefault(member.family, []).append(
                Point(member.name, on_score[member.name])
            )
    return outcome


def run_replay(args: argparse.Namespace, table: pd.DataFrame, source_name: str, validation) -> int:
    """The replay of ``table`` (already loaded) and its report; the exit status."""
    tune_on, score_on, _ = validation
    started = time.perf_counter()
    series = load_trace_series(args, table)
    outcome = run_loop(table, series, args, tune_on, score_on)
    scope = "every run (in-sample)" if score_on is None else f"runs of {score_on.text}"
    if tune_on is not None:
        scope += f", knobs tuned on {tune_on.text}"
    if args.json:
        meta = {
            "source": source_name,
            "series": str(args.series),
            "samples": series.samples,
            "tune_on": args.tune_on,
            "score_on": args.score_on,
            "cadence_min": args.cadence_min,
            "checkpoint_min": args.checkpoint_min,
            "migration_restarts": not args.migration_in_place,
            "oom_target_per_1000h": args.oom_target,
            "throttle_target": args.throttle_target,
        }
        print(json.dumps(report.to_json(outcome, meta), indent=2))
    else:
        print(report.to_table(outcome, scope))
    if not args.quiet:
        elapsed = time.perf_counter() - started
        print(
            f"{outcome.runs} runs ({series.samples} samples) replayed in {elapsed:.1f} s",
            file=sys.stderr,
        )
    return 0


def _mask(table: pd.DataFrame, period: Period | None) -> np.ndarray:
    if period is None:
        return np.ones(len(table), dtype=bool)
    return period.mask(table["start"])
