"""``brain train``: fit the learned recommender on a history of runs and store it.

Heavy imports (pandas, scikit-learn) happen in ``run`` so that building the ``brain``
parser stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from brain.lab.run_source import add_run_source

DESCRIPTION = """Fit the learned recommender (learned_peak: a calibrated forecast of each
resource's next peak, per role) on a history of runs and store it as a new version in
BRAIN_MODEL_DIR (or --model-dir). `brain serve` loads the newest version at start and,
with BRAIN_TRAIN_INTERVAL_S, retrains from its database on that schedule. Every run
is described by the runs of its workload that finished before it only."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "train", help="fit and store the learned recommender", description=DESCRIPTION
    )
    add_run_source(
        parser,
        from_db_help="succeeded jobs of the Brain database (BRAIN_DATABASE_URL) vouched for "
        "(registered by a token for every namespace, or reached by a job master), every role "
        "of each from its stored summaries",
    )
    parser.add_argument(
        "--period",
        metavar="PERIOD",
        help="train on the runs starting in this period only (START..END, YYYY-MM, YYYY-MM-DD)",
    )
    parser.add_argument(
        "--model-dir", type=Path, metavar="DIR", help="where to store it (default BRAIN_MODEL_DIR)"
    )
    parser.add_argument("--json", action="store_true", help="print what was stored as JSON")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from brain.config import Settings
    from brain.lab.backtest.periods import PeriodError, parse_period
    from brain.learned_sizing import store
    from brain.learned_sizing.training import train
    from brain.replay.trace import TraceError, TraceFile

    settings = Settings()
    directory = args.model_dir or Path(settings.model_dir)
    started = time.perf_counter()
    try:
        period = parse_period(args.period) if args.period else None
        if args.from_db:
            from brain.retraining.runs import role_runs

            table = role_runs(settings.database_url, gpu_memory_mib=args.gpu_memory_mib)
        else:
            table = TraceFile(args.trace, gpu_memory_mib=args.gpu_memory_mib).load()
    except (PeriodError, TraceError) as exc:
        print(f"brain train: {exc}", file=sys.stderr)
        return 2
    within = None if period is None else period.mask(table["start"])
    model = train(table, within)
    if not model.resources:
        print("brain train: too few runs to train on (at least 50 per resource)", file=sys.stderr)
        return 1
    model.figures["fit_seconds"] = round(time.perf_counter() - started, 2)
    stored = store.save(model, directory)
    if args.json:
        print(json.dumps(stored.meta, indent=2))
    else:
        parts = ", ".join(
            f"{name}: {r['parts']['examples']} runs, quantile {r['parts']['level']:g}, "
            f"{r['parts']['folds']} folds"
            for name, r in stored.meta["resources"].items()
        )
        print(
            f"stored {stored.model_path} (version {stored.version}; {model.runs} runs "
            f"{model.period_start} .. {model.period_end}; {parts}) in "
            f"{model.figures['fit_seconds']} s"
        )
    return 0
