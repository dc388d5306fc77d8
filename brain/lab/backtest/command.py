"""``brain backtest``: replay a history of runs and compare how recommenders would have sized them.

Heavy imports (pandas, matplotlib, the optimizers) happen in ``run`` so that building
the ``brain`` parser stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

from brain.lab.run_source import add_run_source

# The job statuses that end a run (brain.domain.JobStatus.finished), kept here so that
# building the parser imports nothing.
FINISHED_STATUSES = ("succeeded", "failed", "stopped")

DESCRIPTION = """Replay a history of runs in time order. Every run is sized by each recommender
from the earlier runs of its workload only, and the size is compared with what the
run really used: share of runs under-provisioned (memory peak above it: OOM; CPU
p95 above it: throttled; GPU memory peak above the share: out of GPU memory), mean
slack of the others, allocated/used, and allocated resource-hours against the
request as given. Runs with fewer than --min-history earlier runs are reported
apart (cold start).

Out-of-time validation: with --tune-on and --score-on, every knob (the simple rules'
margin, learned_margin's safety) is chosen on the runs of the tuning period and its
figures are reported on the runs of the scored period; every figure printed is then
a scored-period figure, and the curves and dominance count are the scored period's.
Without them all figures are in-sample. Runs of either period are still sized from
all their earlier runs, as the service would."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "backtest",
        help="replay a trace of runs and compare recommenders",
        description=DESCRIPTION,
    )
    add_run_source(
        parser,
        from_db_help="finished jobs of the Brain database (BRAIN_DATABASE_URL), from their "
        "stored summaries: one run per job, the job's group key as its workload, the requests "
        "and usage of its main role per node (run `brain summarize` first for jobs not yet "
        "summarized); with --replay, the series of the main role's node with the highest "
        "memory peak, from the stored samples",
    )
    jobs = parser.add_argument_group(
        "job filters (with --from-db)",
        "Which jobs are runs, as in the jobs list. The main role of a workload is the one "
        "holding most of its requested GPU-hours, then core-hours, then GiB-hours.",
    )
    jobs.add_argument("--user", help="only this user's jobs")
    jobs.add_argument(
        "--status",
        choices=[*FINISHED_STATUSES, "finished"],
        default=None,
        help="jobs that ended so (default succeeded; finished: any of them)",
    )
    jobs.add_argument("--name", help="only jobs of this name")
    jobs.add_argument("--dataset", help="only jobs on this dataset")
    jobs.add_argument("--group", metavar="KEY", help="only this group key (one workload)")
    jobs.add_argument(
        "--role", help="judge this role of every job (default: each workload's main role)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--chart", type=Path, metavar="PATH", help="also sweep the knobs and draw a PNG here"
    )
    parser.add_argument(
        "--min-history",
        type=int,
        default=3,
        metavar="N",
        help="earlier runs a run needs to count outside cold start (default 3)",
    )
    parser.add_argument(
        "--sample-minutes",
        type=float,
        default=None,
        metavar="MIN",
        help="minutes per sample, for run durations (default: 5 for day traces, 1 for hour)",
    )
    parser.add_argument(
        "--k", type=int, default=7, help="runs the simple rules look back on (default 7)"
    )
    parser.add_argument(
        "--margin", type=float, default=1.15, help="the simple rules' margin (default 1.15)"
    )
    periods = parser.add_argument_group(
        "out-of-time validation",
        "Periods as START..END (ISO dates or times, UTC, END excluded, either side may be "
        "left out), YYYY-MM (a month) or YYYY-MM-DD (a day); a run belongs to the period "
        "its start lies in.",
    )
    periods.add_argument(
        "--tune-on", metavar="PERIOD", help="choose every knob on the runs of this period"
    )
    periods.add_argument(
        "--score-on",
        metavar="PERIOD",
        help="report figures on the runs of this period only (must not overlap --tune-on)",
    )
    periods.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="RESOURCE=RATE",
        help="under-provisioning a knob is tuned to (defaults memory=0.005, cpu=0.01, "
        "gpu_memory=0.04): the cheapest knob value at or below it on the tuning period",
    )
    loop = parser.add_argument_group(
        "replay through the loop",
        "With --replay every run's usage series is stepped through Brain's default "
        "pipeline as a job master runs it (create-stage size from the earlier runs; the "
        "running stage at the master's cadence, every plan applied; an OOM kill when "
        "memory use exceeds the allocation, restarted at oom_recovery's size, progress "
        "since the last checkpoint lost) and through the baselines (request as given, "
        "one-shot rules, VPA-like, Autopilot-like moving window). Figures are "
        "time-integrated: memory and core-hours allocated, requested and used, OOM kills "
        "per 1,000 run-hours, restarts, progress lost, CPU throttled time. With --tune-on "
        "and --score-on every family's knob is swept, chosen on the tuning period (fewest "
        "memory-hours at --oom-target, fewest core-hours at --throttle-target) and reported "
        "on the scored one with the memory-saved against OOM-rate curves.",
    )
    loop.add_argument("--replay", action="store_true", help="replay the runs' usage series")
    loop.add_argument(
        "--series",
        type=Path,
        metavar="PATH",
        help="CSV or CSV.gz of samples (workload, ts, cpu cores, mem_mib) of the --trace runs",
    )
    loop.add_argument(
        "--cadence-min",
        type=float,
        default=5.0,
        metavar="MIN",
        help="minutes between the master's running-stage calls (default 5)",
    )
    loop.add_argument(
        "--checkpoint-min",
        type=float,
        default=30.0,
        metavar="MIN",
        help="minutes between checkpoints; a restart loses the progress since (default 30)",
    )
    loop.add_argument(
        "--migration-in-place",
        action="store_true",
        help="Brain's and VPA's resizes happen in place (default: a migration relaunches "
        "the pod and costs a restart)",
    )
    loop.add_argument(
        "--oom-target",
        type=float,
        default=1.0,
        metavar="PER_1000H",
        help="OOM kills per 1,000 run-hours memory knobs are tuned to (default 1)",
    )
    loop.add_argument(
        "--throttle-target",
        type=float,
        default=0.01,
        metavar="SHARE",
        help="share of run-hours CPU may be throttled that CPU knobs are tuned to (default 0.01)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no timing")
    parser.set_defaults(handler=run)
    return parser


def source_from_args(args: argparse.Namespace):
    """The ``RunSource`` the arguments name."""
    from brain.replay.trace import TraceFile

    if getattr(args, "from_db", False):
        return _database_runs(args)
    return TraceFile(
        args.trace, gpu_memory_mib=args.gpu_memory_mib, sample_minutes=args.sample_minutes
    )


def _database_runs(args: argparse.Namespace):
    from brain.config import Settings
    from brain.domain import JobStatus
    from brain.replay.db_source import DatabaseRuns
    from brain.services.jobs import JobFilters

    status = args.status or JobStatus.succeeded.value
    filters = JobFilters(
        user=args.user,
        status=None if status == "finished" else JobStatus(status),
        name=args.name,
        dataset=args.dataset,
        group_key=args.group,
    )
    return DatabaseRuns(
        Settings().database_url, filters, role=args.role, gpu_memory_mib=args.gpu_memory_mib
    )


def _filters_given(args: argparse.Namespace) -> list[str]:
    return [
        f"--{name}"
        for name in ("user", "status", "name", "dataset", "group", "role")
        if getattr(args, name, None) is not None
    ]


def _replay_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the replay options, if anything."""
    if not args.replay:
        given = [
            name
            for name, value in (
                ("--series", args.series),
                ("--migration-in-place", args.migration_in_place),
            )
            if value
        ]
        return f"{', '.join(given)} need --replay" if given else None
    if args.from_db:
        if args.series is not None:
            return "--replay --from-db reads the series from the database, not --series"
        others = [f for f in _filters_given(args) if f != "--group"]
        if others:
            return f"--replay --from-db takes --group but not {', '.join(others)}"
    elif args.series is None:
        return "--replay needs --series (the runs' usage samples)"
    if args.chart is not None:
        return "--replay draws no chart; its curves are in the table and --json"
    if args.cadence_min <= 0 or args.checkpoint_min <= 0:
        return "--cadence-min and --checkpoint-min must be positive"
    if args.oom_target < 0 or not 0 <= args.throttle_target <= 1:
        return "--oom-target >= 0 and --throttle-target a fraction 0..1"
    return None


def missing_extra(chart: bool) -> list[str]:
    """The packages of the ``backtest`` extra this run needs and cannot import."""
    missing = []
    for name in ("pandas", "matplotlib") if chart else ("pandas",):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def _validation(args: argparse.Namespace):
    """The tuning period, the scored period and the targets the arguments give."""
    from brain.lab.backtest.periods import parse_period
    from brain.lab.backtest.tuning import DEFAULT_TARGETS
    from brain.replay.resources import BY_NAME

    tune_on = parse_period(args.tune_on) if args.tune_on else None
    score_on = parse_period(args.score_on) if args.score_on else None
    if tune_on is not None and score_on is None:
        raise ValueError("--tune-on needs --score-on (the period the figures are reported on)")
    if tune_on is not None and tune_on.overlaps(score_on):
        raise ValueError(f"--tune-on {tune_on.text} overlaps --score-on {score_on.text}")
    targets = dict(DEFAULT_TARGETS)
    for given in args.target:
        resource, _, rate = given.partition("=")
        if resource not in BY_NAME:
            raise ValueError(f"--target {given}: resource is one of {', '.join(BY_NAME)}")
        try:
            targets[resource] = float(rate)
        except ValueError:
            raise ValueError(f"--target {given}: the rate must be a number") from None
        if not 0 <= targets[resource] <= 1:
            raise ValueError(f"--target {given}: the rate is a fraction 0..1")
    return tune_on, score_on, targets


def run(args: argparse.Namespace) -> int:
    missing = missing_extra(chart=args.chart is not None)
    if missing:
        print(
            f"brain backtest needs {' and '.join(missing)}: pip install 'brain[backtest]'",
            file=sys.stderr,
        )
        return 2
    from brain.lab.backtest import report
    from brain.lab.backtest.runner import Options, backtest
    from brain.optimizing import load_registry
    from brain.progress import ProgressBar
    from brain.replay.resources import RESOURCES, present
    from brain.replay.trace import TraceError

    if args.min_history < 0 or args.k < 1 or args.margin <= 0 or args.gpu_memory_mib <= 0:
        print(
            "brain backtest: --min-history >= 0, --k >= 1, --margin and --gpu-memory-mib > 0",
            file=sys.stderr,
        )
        return 2
    if not args.from_db and _filters_given(args):
        print(f"brain backtest: {', '.join(_filters_given(args))} need --from-db", file=sys.stderr)
        return 2
    problem = _replay_problem(args)
    if problem:
        print(f"brain backtest: {problem}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    if args.replay and args.from_db:
        from brain.lab.backtest.loop.command import run_replay

        try:
            return run_replay(args, None, "database", _validation(args))
        except (TraceError, ValueError) as exc:
            print(f"brain backtest: {exc}", file=sys.stderr)
            return 2
    source = source_from_args(args)
    try:
        table = source.load()
    except TraceError as exc:
        print(f"brain backtest: {exc}", file=sys.stderr)
        return 2
    if not present(table):
        columns = ", ".join(f"{r.peak} with {r.request}" for r in RESOURCES)
        print(f"brain backtest: no resource to judge; the trace needs {columns}", file=sys.stderr)
        return 2
    try:
        tune_on, score_on, targets = _validation(args)
    except ValueError as exc:
        print(f"brain backtest: {exc}", file=sys.stderr)
        return 2
    if args.replay:
        from brain.lab.backtest.loop.command import run_replay

        try:
            return run_replay(args, table, source.name, (tune_on, score_on, targets))
        except TraceError as exc:
            print(f"brain backtest: {exc}", file=sys.stderr)
            return 2
    options = Options(
        min_history=args.min_history,
        k=args.k,
        margin=args.margin,
        sweep=args.chart is not None,
        tune_on=tune_on,
        score_on=score_on,
        targets=targets,
    )

    def progress(label: str, total: int) -> ProgressBar:
        return ProgressBar(total, label, quiet=args.quiet)

    outcome = backtest(table, load_registry(), options, progress)
    if args.chart is not None:
        from brain.lab.backtest.chart import draw

        title = f"backtest of {source.name}, {report.scope(options)}"
        draw(outcome.rows, outcome.curves, args.chart, title)
    if args.json:
        meta = {
            "source": source.name,
            "runs": outcome.runs,
            "workloads": outcome.workloads,
            "min_history": args.min_history,
            "tune_on": args.tune_on,
            "score_on": args.score_on,
            "scored_runs": outcome.scored_runs,
            "in_sample": tune_on is None,
        }
        print(json.dumps(report.to_json(outcome, meta), indent=2))
    else:
        print(report.to_table(outcome, options))
    if not args.quiet:
        elapsed = time.perf_counter() - started
        print(
            f"{outcome.runs} runs of {outcome.workloads} workloads replayed in {elapsed:.1f} s",
            file=sys.stderr,
        )
    return 0
