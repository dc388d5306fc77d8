"""``brain backtest --replay``: the runs' usage series stepped through Brain's loop and the
baselines, with the figures of ``figures``."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pandas as pd

from brain.config import Settings
from brain.lab.backtest.loop import lineup, report
from brain.lab.backtest.loop.runner import LoopOutcome, Point, choose, figures_of, replay_runs
from brain.lab.backtest.periods import Period
from brain.optimizing import load_registry
from brain.progress import ProgressBar
from brain.replay.harness import HarnessSettings
from brain.replay.series import RunSeries, attach, period_of, read_series


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


def database_runs(database_url: str, group: str | None) -> tuple[pd.DataFrame, RunSeries]:
    """Every finished, summarized job of the database as the run table and its series:
    one run per job (its group key as workload), sized per node of its main role and
    replayed on that role's node with the highest memory peak (``site_runs``)."""
    from datetime import UTC, datetime

    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.orm import Session

    from brain.db.engine import make_engine
    from brain.replay.site_runs import load_runs, load_series
    from brain.replay.trace import TraceError, check_normalized

    engine = make_engine(database_url)
    try:
        with Session(engine) as session:
            runs = load_runs(session, datetime(1970, 1, 1, tzinfo=UTC), group=group)
            nodes = load_series(session, [r.peak_node_id for r in runs if r.peak_node_id])
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise TraceError(f"cannot read the database: {reason}") from exc
    finally:
        engine.dispose()
    if not runs:
        raise TraceError("no finished, summarized job in the database (run `brain summarize`)")
    table = check_normalized(
        pd.DataFrame(
            {
                "workload": [r.group_key for r in runs],
                "start": pd.to_datetime([r.start for r in runs], utc=True),
                "seq": np.arange(len(runs)),
                "duration_h": [r.run_hours for r in runs],
                "req_cpu": [r.run.submission.req_cpu for r in runs],
                "req_memory_mib": [r.run.submission.req_memory_mib for r in runs],
                "req_gpu": np.nan,
                "req_gpu_memory_mib": np.nan,
                "cpu_mean": [r.run.cpu_mean for r in runs],
                "cpu_p95": [r.run.cpu_p95 for r in runs],
                "cpu_max": [r.run.cpu_max for r in runs],
                "mem_mean": [r.run.mem_mean for r in runs],
                "mem_max": [r.run.mem_max for r in runs],
                "gpu_util_mean": np.nan,
                "gpu_mem_mib_max": np.nan,
                "gpu_mem_total_mib": np.nan,
            }
        ).astype(
            {
                c: float
                for c in (
                    "req_cpu",
                    "req_memory_mib",
                    "cpu_mean",
                    "cpu_p95",
                    "cpu_max",
                    "mem_mean",
                    "mem_max",
                )
            }
        )
    )
    empty = np.zeros(0)
    parts = [nodes.get(runs[int(seq)].peak_node_id) for seq in table["seq"]]
    lengths = [0 if p is None else len(p.ts) for p in parts]
    gaps = np.concatenate(
        [np.diff(p.ts) for p in parts if p is not None and len(p.ts) > 1] or [empty]
    )
    return table, RunSeries(
        offsets=np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
        ts=np.concatenate([p.ts for p in parts if p is not None] or [empty]).astype(np.int64),
        cpu=np.concatenate([p.cpu for p in parts if p is not None] or [empty]),
        mem=np.concatenate([p.mem for p in parts if p is not None] or [empty]),
        sample_s=float(np.median(gaps)) if len(gaps) else 60.0,
    )


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
    if args.from_db:
        table, series = database_runs(Settings().database_url, args.group)
        source_name = "database"
    else:
        series = load_trace_series(args, table)
    outcome = run_loop(table, series, args, tune_on, score_on)
    scope = "every run (in-sample)" if score_on is None else f"runs of {score_on.text}"
    if tune_on is not None:
        scope += f", knobs tuned on {tune_on.text}"
    if args.json:
        meta = {
            "source": source_name,
            "series": None if args.from_db else str(args.series),
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
