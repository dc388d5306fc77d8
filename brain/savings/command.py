"""``brain report savings``: what Brain's defaults would have saved on this site's finished
jobs, at what replayed OOM risk, and what applied plans saved."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timedelta

from brain.savings.report import BY, Savings, SavingsRow

COLUMNS = (
    ("key", 28),
    ("jobs", 6),
    ("core-h req", 11),
    ("used", 9),
    ("brain", 9),
    ("GiB-h req", 11),
    ("used", 9),
    ("brain", 9),
    ("GPU-h req", 10),
    ("OOM/1kh", 8),
    ("plans", 6),
    ("plan core-h", 11),
    ("plan GiB-h", 10),
)
# The report replays one role per job; said on every answer, and every role's hours (as
# the console and the portraits count them) are given apart, so the two never seem to
# disagree.
ROLES_COUNTED = (
    "each job's main role only (the role holding most of its requested GPU-hours, then "
    "core-hours, then GiB-hours) in the requested, used and Brain columns; every role, as "
    "the console and the portraits count them, in all_roles_* and the 'every role' line"
)


def add_parser(commands) -> None:
    """Add ``report`` (with ``savings``) to the ``brain`` CLI's subparsers."""
    report = commands.add_parser("report", help="reports on this site's own history")
    reports = report.add_subparsers(title="reports", metavar="REPORT", required=True)
    parser = reports.add_parser(
        "savings",
        help="what Brain's defaults would have allocated for finished jobs, and plans saved",
        description="On the finished, summarized jobs of the last --days (BRAIN_DATABASE_URL): "
        "each job's main role's requested and used core-, GiB- and GPU-hours, and every "
        "role's (as the console shows them) apart; what Brain's "
        "default pipeline would have allocated, replayed on the job's stored samples (create "
        "stage from its group's earlier runs, running stage at --cadence-min, OOM kills "
        "answered by the OOM stage), with the replay's OOM kills per 1,000 node-hours; and "
        "what the applied plans saved (role totals before minus after each plan, to the "
        "job's end); in dollars at BRAIN_PRICE_*, else at the default prices it names. Jobs "
        "whose replay is stored with their summary (the summary refresher, `brain "
        "summarize`) are summed from it; the others are replayed now, and all of them at "
        "a --cadence-min other than 5. Run `brain summarize` first for jobs not yet summarized.",
    )
    parser.add_argument("--days", type=int, default=30, help="window in days (default 30)")
    parser.add_argument(
        "--by", choices=BY, default="namespace", help="rows per (default namespace)"
    )
    parser.add_argument(
        "--namespace",
        action="append",
        metavar="NS",
        help="only jobs of this namespace (repeat for several)",
    )
    parser.add_argument(
        "--cadence-min",
        type=float,
        default=5.0,
        metavar="MIN",
        help="minutes between the master's running-stage calls (default 5)",
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="first store the replay of every summarized job without one, as the summary "
        "refresher of brain serve does (for sites that summarize from cron)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no timing")
    parser.set_defaults(handler=run, needs_database=True)


def run(args: argparse.Namespace) -> int:
    if args.days < 1 or args.cadence_min <= 0:
        print("brain report savings: --days >= 1 and --cadence-min > 0", file=sys.stderr)
        return 2
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.orm import Session

    from brain.config import Settings
    from brain.db.engine import make_engine, make_session_factory
    from brain.domain import utcnow
    from brain.optimizing import load_registry
    from brain.progress import ProgressBar
    from brain.savings.report import savings
    from brain.savings.stored import store_pending_savings

    started = time.perf_counter()
    settings = Settings()
    since = utcnow() - timedelta(days=args.days)
    engine = make_engine(settings.database_url)
    bars: list[ProgressBar] = []

    def progress(done: int, total: int) -> None:
        if not bars:
            bars.append(ProgressBar(total, "replay", quiet=args.quiet))
        bars[0](done)

    try:
        with Session(engine) as session:
            registry = load_registry()
            if args.store:
                stored = store_pending_savings(make_session_factory(engine), settings, registry)
                if not args.quiet:
                    print(f"stored the replay of {stored} jobs", file=sys.stderr)
            report = savings(
                session,
                registry,
                settings,
                since,
                by=args.by,
                namespaces=args.namespace,
                cadence_s=args.cadence_min * 60.0,
                progress=progress,
            )
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        print(f"brain report savings: cannot read the database: {reason}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    if args.json:
        print(json.dumps(to_json(report, args.days), indent=2))
    else:
        print(to_table(report, args.days))
    if not args.quiet:
        elapsed = time.perf_counter() - started
        print(f"{report.total.jobs} jobs in {elapsed:.1f} s", file=sys.stderr)
    return 0


def to_json(report: Savings, days: int) -> dict:
    return {
        "days": days,
        "since": report.since.isoformat(),
        "by": report.by,
        "priced": report.priced,
        "prices": report.price_label,
        "roles_counted": ROLES_COUNTED,
        "rows": [row.as_dict() for row in report.rows],
        "total": report.total.as_dict(),
    }


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) < 1e5 else f"{value:.3g}"
    return str(value)


def line(row: SavingsRow) -> str:
    cells = (
        row.key,
        row.jobs,
        row.requested_core_h,
        row.used_core_h,
        row.brain_core_h,
        row.requested_gib_h,
        row.used_gib_h,
        row.brain_gib_h,
        row.requested_gpu_h,
        row.brain_ooms_per_1000h,
        row.plans_applied,
        row.plans_saved_core_h,
        row.plans_saved_gib_h,
    )
    return "  ".join(
        _cell(c).ljust(w) if i == 0 else _cell(c).rjust(w)
        for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS, strict=True))
    )


def to_table(report: Savings, days: int) -> str:
    header = "  ".join(t.ljust(w) if i == 0 else t.rjust(w) for i, (t, w) in enumerate(COLUMNS))
    total = report.total
    out = [
        f"Finished jobs of the last {days} days by {report.by}: requested, used and what "
        "Brain's defaults would allocate (replayed), OOM kills per 1,000 replayed node-hours, "
        "and what applied plans saved.",
        f"Hours are of {ROLES_COUNTED}.",
        "",
        header,
        *(line(row) for row in report.rows),
        line(total),
    ]
    for what, requested, brain in (
        ("core-hours", total.requested_core_h, total.brain_core_h),
        ("GiB-hours", total.requested_gib_h, total.brain_gib_h),
    ):
        if requested > 0:
            out.append(f"Brain would save {100 * (1 - brain / requested):.1f}% of requested {what}")
    out.append(
        f"Every role (as the console shows): requested {total.all_roles_requested_core_h:,.1f} "
        f"core-hours, used {total.all_roles_used_core_h:,.1f}; requested "
        f"{total.all_roles_requested_gib_h:,.1f} GiB-hours, used "
        f"{total.all_roles_used_gib_h:,.1f}; requested {total.all_roles_requested_gpu_h:,.1f} "
        f"GPU-hours, used {total.all_roles_used_gpu_h:,.1f}"
    )
    if report.priced:
        out.append(
            f"At {report.price_label}: requested ${total.requested_usd:,.2f}, used "
            f"${total.used_usd:,.2f}, Brain ${total.brain_usd:,.2f}; applied plans saved "
            f"${total.plans_saved_usd:,.2f}; every role requested "
            f"${total.all_roles_requested_usd:,.2f}, used ${total.all_roles_used_usd:,.2f}"
        )
    return "\n".join(out)
