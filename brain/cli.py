"""The ``brain`` command line: the commands of the ``brain`` package.

The ``brain`` program itself is ``api.main``: it adds the commands that live
above this package (``serve``, ``collect``) and hands ``brain simulate`` the HTTP app's
factory, since ``brain`` never imports ``api``. Third-party commands register through
the ``brain.commands`` entry point group."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import brain
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.db.presence import database_problem, missing_sqlite_file, no_database_message
from brain.domain import utcnow
from brain.jobs_command import add_parser as add_jobs_parser
from brain.lab.backtest.command import add_parser as add_backtest_parser
from brain.lab.simulation.cli import add_parser as add_simulate_parser
from brain.lab.training.command import add_parser as add_train_parser
from brain.optimizing import load_registry
from brain.plugins import COMMANDS_GROUP, load_callables
from brain.savings.command import add_parser as add_report_parser
from brain.summaries.command import add_parser as add_summarize_parser
from brain.summaries.retention import delete_old_samples
from brain.token_command import add_parser as add_token_parser

log = logging.getLogger(__name__)

DESCRIPTION = """Brain: resource optimization for distributed ML training.

Configuration comes from BRAIN_* environment variables (see `brain config`)."""


# Adds one subcommand to the ``brain`` program's subparsers.
Register = Callable[[Any], None]


def main(
    argv: Sequence[str] | None = None,
    extra_commands: Sequence[Register] = (),
    app_factory: Callable[..., Any] | None = None,
) -> int:
    """Run one command; ``extra_commands`` and ``app_factory`` as for ``build_parser``."""
    parser = build_parser(extra_commands, app_factory)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(args, "log_level", None) or Settings().log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    # Commands that read or change the data find it first: a clear message instead of
    # a traceback (and, on SQLite, an empty database file created where they ran).
    if getattr(args, "needs_database", False) or getattr(args, "from_db", False):
        problem = database_problem(Settings().database_url)
        if problem is not None:
            print(f"brain {args.command}: {problem}", file=sys.stderr)
            return 2
    try:
        code = args.handler(args) or 0
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`brain config | head`): stop quietly, no traceback, and
        # keep the interpreter's last flush from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


def build_parser(
    extra_commands: Sequence[Register] = (), app_factory: Callable[..., Any] | None = None
) -> argparse.ArgumentParser:
    """Every ``brain`` command plus ``extra_commands`` (registered after them); ``app_factory``
    builds the HTTP app ``brain simulate`` runs in-process (None: only ``--url``)."""
    parser = argparse.ArgumentParser(
        prog="brain", description=DESCRIPTION, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.set_defaults(app_factory=app_factory)
    parser.add_argument("--version", action="version", version=f"brain {brain.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")

    config = commands.add_parser(
        "config",
        help="print the effective configuration (secrets masked)",
        description="Print the effective configuration as JSON: every setting with its "
        "value from BRAIN_* environment variables or its default (for stage_optimizers, "
        "the pipelines the installed optimizers declare); passwords (also in "
        "BRAIN_DATABASE_URL) and tokens are masked; `prices_in_effect` gives each price "
        "Brain computes dollars at and where it came from (a BRAIN_PRICE_* or the defaults).",
    )
    config.set_defaults(handler=_config)

    db = commands.add_parser("db", help="database schema migrations")
    db_commands = db.add_subparsers(title="db commands", metavar="DB_COMMAND", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply pending migrations (to head)")
    upgrade.add_argument("--revision", default="head", help="target revision (default: head)")
    upgrade.set_defaults(handler=_db_upgrade)
    current = db_commands.add_parser("current", help="print the applied and the latest revision")
    current.set_defaults(handler=_db_current)

    retention = commands.add_parser(
        "retention",
        help="delete raw samples older than --days from summarized jobs",
        description="Delete raw node and speed samples older than N days, only for jobs "
        "whose summary is kept, so portraits stay intact.",
    )
    retention.add_argument(
        "--days", type=int, default=None, help="age in days (default: BRAIN_RETENTION_DAYS)"
    )
    retention.set_defaults(handler=_retention, needs_database=True)

    add_jobs_parser(commands)
    add_backtest_parser(commands)
    add_report_parser(commands)
    add_summarize_parser(commands)
    add_train_parser(commands)
    add_token_parser(commands)
    add_simulate_parser(commands)
    for register in extra_commands:
        register(commands)
    for name, register in sorted(load_callables(COMMANDS_GROUP).items()):
        if name in commands.choices:
            # Registering a name twice would stop the whole program. An install made
            # from an older checkout lists Brain's own serve and collect here: skipped
            # quietly, since every command of that install would otherwise say so.
            log.debug("command %s already exists; its %s plugin is ignored", name, name)
            continue
        register(commands)
    return parser


def _config(_args) -> int:
    settings = Settings()
    shown = settings.masked()
    # What money is computed at, and whether each price is the site's or the default's.
    shown["prices_in_effect"] = settings.price_origins()
    if shown["stage_optimizers"] is None:  # unset: the optimizers' declared defaults run
        shown["stage_optimizers"] = load_registry().default_pipelines()
    print(json.dumps(shown, indent=2, sort_keys=True))
    return 0


def _db_upgrade(args) -> int:
    settings = Settings()
    migrate.upgrade(settings.database_url, args.revision)
    print(f"database at {args.revision}")
    return 0


def _db_current(_args) -> int:
    settings = Settings()
    head = migrate.head_revision(settings.database_url)
    missing = missing_sqlite_file(settings.database_url)
    if missing is not None:
        print(f"current: none\nhead:    {head}")
        print(no_database_message(settings.database_url, missing), file=sys.stderr)
        return 1
    engine = make_engine(settings.database_url)
    try:
        applied = migrate.current_revision(engine)
    finally:
        engine.dispose()
    print(f"current: {applied or 'none'}\nhead:    {head}")
    return 0 if applied == head else 1


def _retention(args) -> int:
    settings = Settings()
    days = args.days or settings.retention_days
    if not days:
        print("no retention set: pass --days or set BRAIN_RETENTION_DAYS", file=sys.stderr)
        return 2
    engine = make_engine(settings.database_url)
    try:
        with make_session_factory(engine)() as session:
            deleted = delete_old_samples(session, days, utcnow())
            session.commit()
    finally:
        engine.dispose()
    print(f"deleted {deleted} raw samples older than {days} days")
    return 0


if __name__ == "__main__":
    sys.exit(main())
