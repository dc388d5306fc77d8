"""``brain collect``: the Prometheus collector on its own (a command of ``api.server``)."""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import timedelta

from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.durations import duration_s
from brain.telemetry import Telemetry

DESCRIPTION = """Read the load of running jobs from Prometheus (cAdvisor, DCGM exporter,
kube-state-metrics) and store it as node samples and OOM events, exactly as if the job
master had pushed them. Each cycle reads, per job, from just after its last stored point
up to now minus BRAIN_COLLECT_DELAY_S; points already stored are skipped, so runs can
overlap or repeat safely.

Without --once the collector runs until interrupted, one cycle every
BRAIN_COLLECT_INTERVAL_S seconds; with several replicas on one PostgreSQL only the
holder of an advisory lock collects and another takes over when it dies. `brain serve`
runs the same loop in-process whenever BRAIN_PROMETHEUS_URL is set.

Configuration: BRAIN_PROMETHEUS_URL (required), BRAIN_PROMETHEUS_TOKEN or
BRAIN_PROMETHEUS_USERNAME/_PASSWORD, BRAIN_PROMETHEUS_CA_FILE, BRAIN_PROMETHEUS_STEP_S,
BRAIN_PROMETHEUS_QUERIES, BRAIN_COLLECT_MAPPING, BRAIN_POD_NAME_PATTERN, BRAIN_JOB_LABEL
(see `brain config`)."""

EPILOG = """examples:
  brain collect                        run continuously
  brain collect --once                 one cycle for every running job, then exit
  brain collect --once --job 7f3a      one cycle for one job (any status)
  brain collect --once --job 7f3a --since 2h
                                       backfill the last two hours of that job
  brain collect --backfill 14d         discover every training job of the last 14 days
                                       and read its history (5-minute points)

exit status (--once, --backfill): 0 when every query and write succeeded, 1 otherwise,
2 on a configuration error."""


def parse_duration(text: str) -> timedelta:
    """``90``, ``90s``, ``30m``, ``2h``, ``1d12h``, ``1w`` as a positive timedelta."""
    try:
        seconds = duration_s(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive, got {text!r}")
    return timedelta(seconds=seconds)


def register(commands) -> None:
    collect = commands.add_parser(
        "collect",
        help="read job load (CPU, memory, GPU, OOM kills) from Prometheus",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    collect.add_argument(
        "--once",
        action="store_true",
        help="run one cycle and exit (does not wait for the collector lock)",
    )
    collect.add_argument(
        "--job",
        metavar="UID",
        action="append",
        dest="jobs",
        help="only this job, whatever its status; repeat for several",
    )
    collect.add_argument(
        "--since",
        metavar="DURATION",
        type=parse_duration,
        help="backfill: read from this long ago (90s, 30m, 2h, 1d) instead of from the last "
        "stored point; points already stored are skipped",
    )
    collect.add_argument(
        "--backfill",
        metavar="DURATION",
        type=parse_duration,
        help="discover every training job that ran in this long a past (7d, 14d) and read "
        "its history at BRAIN_DISCOVERY_HISTORY_STEP_S, then exit; running it again "
        "changes nothing",
    )
    collect.add_argument(
        "--interval",
        metavar="SECONDS",
        type=float,
        help="seconds between cycles (default: BRAIN_COLLECT_INTERVAL_S, 60)",
    )
    collect.set_defaults(handler=_collect)


def _collect(args) -> int:
    from collectors.service import CONFIG_ERRORS, CollectorService

    settings = Settings()
    if not settings.collector.prometheus_url:
        print("BRAIN_PROMETHEUS_URL is not set: there is no Prometheus to read", file=sys.stderr)
        return 2
    if args.interval is not None and args.interval <= 0:
        print("--interval must be positive", file=sys.stderr)
        return 2
    if settings.is_sqlite:
        migrate.upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    try:
        try:
            service = CollectorService(
                settings.collector,
                make_session_factory(engine),
                Telemetry(),
                engine=engine,
                job_uids=args.jobs,
                since=args.since,
                interval_s=args.interval,
            )
        except CONFIG_ERRORS as exc:
            print(f"configuration error: {exc}", file=sys.stderr)
            return 2
        try:
            if args.backfill is not None:
                return _backfill(service, args.backfill)
            if args.once:
                report = service.run_once()
                print(report.summary())
                return 0 if report.ok else 1
            _stop_on_signals(service.stop_event)
            service.run_forever()
            return 0
        finally:
            service.close()
    finally:
        engine.dispose()


def _backfill(service, span: timedelta) -> int:
    from brain.progress import ProgressBar
    from collectors.discovery.backfill import backfill

    _stop_on_signals(service.stop_event)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        bar = bar or ProgressBar(total, "backfill", unit="windows")
        bar(done)

    report = backfill(
        service.settings,
        service.session_factory,
        service.client,
        span,
        telemetry=service.telemetry,
        progress=progress,
    )
    print(report.summary())
    return 0 if report.ok and not report.stopped else 1


def _stop_on_signals(stop) -> None:
    def handler(signum, _frame) -> None:
        print(f"received {signal.Signals(signum).name}, stopping", file=sys.stderr)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, handler)
