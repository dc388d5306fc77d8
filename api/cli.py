"""``brain serve``: run the REST API and its parts (``api.server``)."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from brain.config import MAX_DEFAULT_WORKERS, Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.services.tokens import (
    BOOTSTRAP_TOKEN_NAME,
    AuthPolicy,
    BootstrapOutcome,
    TokenVerifier,
    ensure_bootstrap_token,
)

log = logging.getLogger(__name__)


def register(commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="run the REST API (OpenAPI docs at /docs), and DLRover's gRPC service when "
        "BRAIN_GRPC_PORT is set",
        description="Serve the REST API. On the embedded SQLite default, pending migrations "
        "run first; on PostgreSQL run `brain db upgrade` (or pass --migrate). It refuses to "
        "start on a database that is not migrated, and on an address other than loopback "
        "while no API token exists (see `brain token`; BRAIN_BOOTSTRAP_TOKEN provides a "
        "first one), unless BRAIN_AUTH=disabled. "
        "On PostgreSQL several worker processes share the port (one per usable CPU core, "
        "within the container's CPU quota, at most "
        f"{MAX_DEFAULT_WORKERS}, unless --workers says); one of them, elected through the "
        "database, runs the background work. SQLite allows one process. Exits non-zero "
        "when it cannot start, also when a worker process fails to start.",
    )
    serve.add_argument("--host", help="listen address (default: BRAIN_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="listen port (default: BRAIN_PORT, 8080)")
    serve.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="worker processes (default: BRAIN_WORKERS, else the usable CPU cores, at most "
        f"{MAX_DEFAULT_WORKERS}, on PostgreSQL and 1 on SQLite); one of them also runs "
        "the summary refresh and model retraining",
    )
    serve.add_argument(
        "--migrate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply pending migrations before serving (default: only on SQLite)",
    )
    serve.set_defaults(handler=_serve)


def _serve(args) -> int:
    from api.server import serve_app

    settings = Settings()
    # The app decides who needs a token from where it really listens.
    settings = settings.model_copy(
        update={"host": args.host or settings.host, "port": args.port or settings.port}
    )
    workers = args.workers or settings.serve_workers
    if workers > 1 and settings.is_sqlite:
        print(
            f"brain serve: not starting: {workers} worker processes need PostgreSQL; "
            "SQLite takes one writer at a time (use --workers 1)",
            file=sys.stderr,
        )
        return 1
    if args.migrate or (args.migrate is None and settings.is_sqlite):
        migrate.upgrade(settings.database_url)
    problem = _startup_problem(settings)
    if problem:
        print(f"brain serve: not starting: {problem}", file=sys.stderr)
        return 1
    print(serve_addresses(settings), flush=True)
    if workers > 1:
        from api.workers import run_workers

        # Migrations and the checks above ran once, here; the workers only serve.
        return run_workers(settings, workers)
    # One process: it keeps the whole connection pool.
    app = serve_app(settings.model_copy(update={"workers": 1}))
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        timeout_keep_alive=settings.keep_alive_s,
    )
    return 0


def serve_addresses(settings: Settings) -> str:
    """Where to find what ``brain serve`` serves, printed at start so a user need not guess."""
    host = settings.host
    note = ""
    if host in ("0.0.0.0", "::", ""):
        note = f" (listening on every address, {host or 'all'})"
        host = "127.0.0.1"
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    base = f"http://{host}:{settings.port}"
    lines = [
        f"Brain is serving{note}:",
        f"  console   {base}/ui/",
        f"  API       {base}/api/v1/",
        f"  API docs  {base}/docs",
        f"  metrics   {base}/metrics",
    ]
    if settings.grpc_port is not None:
        lines.append(f"  gRPC      {host}:{settings.grpc_port} (DLRover's brain.Brain service)")
    return "\n".join(lines)


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def _store_bootstrap_token(engine, secret: str) -> None:
    factory = make_session_factory(engine)
    for attempt in range(2):
        try:
            with factory() as session:
                outcome = ensure_bootstrap_token(session, secret)
                session.commit()
            break
        except IntegrityError:
            # Another replica stored it at the same moment: the second pass finds it.
            if attempt:
                raise
    if outcome is BootstrapOutcome.revoked:
        log.warning(
            "BRAIN_BOOTSTRAP_TOKEN is the secret of a revoked token: it stays revoked "
            "(remove the setting, or give it a new secret)"
        )
    else:
        log.info("bootstrap admin token %r: %s", BOOTSTRAP_TOKEN_NAME, outcome.value)


def _startup_problem(settings: Settings) -> str | None:
    """Why serving would be wrong: a schema that does not fit this code, or an address
    beyond loopback with no API token (once BRAIN_BOOTSTRAP_TOKEN's is stored). An
    unreachable database is no reason to refuse: the server starts, /readyz and 503
    answers tell, and beyond loopback every request will need a token anyway."""
    engine = make_engine(settings.database_url)
    try:
        status = migrate.schema_status(engine, migrate.head_revision(settings.database_url))
        if not status.up_to_date:
            return status.problem()
        if settings.bootstrap_token is not None:
            _store_bootstrap_token(engine, settings.bootstrap_token.get_secret_value())
        verifier = TokenVerifier(make_session_factory(engine), ttl_s=0)
        return AuthPolicy(settings.auth, settings.host, verifier).refuses_to_start()
    except SQLAlchemyError as exc:
        log.warning("database unreachable at start (%s); serving anyway", type(exc).__name__)
        return None
    finally:
        engine.dispose()
