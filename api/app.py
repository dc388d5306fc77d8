"""The FastAPI application factory. Nothing is built at import time."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress

from fastapi import Depends, FastAPI
from fastapi_offline import FastAPIOffline

import brain
from api.auth import (
    AUTH_RESPONSES,
    Authentication,
    administrator,
    current_principal,
    split_public,
)
from api.body_limit import BodyLimit
from api.console import install as install_console
from api.errors import install_error_handlers
from api.metrics_middleware import RequestMetrics
from api.openapi_bounds import install as install_openapi_bounds
from api.path_check import Utf8Path
from api.plan_watch import PlanWatch
from api.routers import (
    admin,
    cluster,
    events,
    health,
    jobs,
    plans,
    portraits,
    priorities,
    samples,
    savings,
    suggestions,
)
from api.schema_guard import SchemaGate, SchemaGuard
from api.state import ServerState
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_read_session_factory, make_session_factory
from brain.leadership import elect
from brain.optimizing import load_registry
from brain.portraits.metrics import PortraitMetrics
from brain.services.tokens import AuthPolicy, TokenVerifier
from brain.telemetry import Telemetry

DESCRIPTION = """Brain stores the profiles of distributed training jobs (nodes, usage time
series, training speed, events) and turns them into resource plans.

Units are in the field names: `cpu` in cores, `memory_mib` in MiB, `gpu` as a count
(fractional allowed), utilizations as fractions 0..1, timestamps RFC 3339 (returned in UTC).
Every error body is `{{"error": {{"code", "message", "field"}}}}`.

Authentication: `Authorization: Bearer <token>` with a token from `brain token create`
(scopes read, write, admin; optionally limited to namespaces). 401 without a usable token,
403 when its scope or namespaces do not allow the call. A server on loopback with no
token created yet answers without one.
Bodies above BRAIN_MAX_BODY_BYTES ({max_body_bytes:,} bytes on this server) are a 413.

Bounds that are settings (`BRAIN_PLAUSIBLE_*`, `BRAIN_MIN_TIMESTAMP`,
`BRAIN_MAX_BATCH_POINTS`) are stated as this server is configured."""

# A part that runs beside the HTTP API (api.server), started once the state exists.
Part = Callable[[ServerState], None]
# A third-party hook (entry point group ``brain.app_hooks``), called with the app.
Startup = Callable[[FastAPI], None]
# How soon a long-poll hears of a plan stored by this or another process.
PLAN_WATCH_INTERVAL_S = 0.5
log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    parts: Sequence[Part] = (),
    on_startup: Sequence[Startup] = (),
) -> FastAPI:
    """Build the HTTP app; the lifespan creates the engine and the rest of the
    ``ServerState`` (``app.state.server``) and disposes of them at shutdown.

    ``parts`` (what ``brain serve`` runs beside the API, named in ``api.server``) and
    then ``on_startup`` hooks run inside the lifespan once the state exists. They run in
    every worker process of ``brain serve``; work that must happen once checks
    ``ServerState.leadership`` (brain.leadership).
    """

    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = _build_state(settings)
        app.state.server = state
        watching = asyncio.create_task(state.plan_watch.run(), name="plan watch")
        for part in parts:
            part(state)
        for hook in on_startup:
            hook(app)
        # Everything built so far lives as long as the process: keep it out of the
        # cyclic GC's full collections, whose walks over it would otherwise pause requests.
        gc.freeze()
        try:
            yield
        finally:
            watching.cancel()
            with suppress(asyncio.CancelledError):
                await watching
            for stop in reversed(state.shutdown_hooks):
                stop()
            state.leadership.stop()
            state.engine.dispose()

    # /docs and /redoc load their assets from the package (offline), not from a CDN.
    app = FastAPIOffline(
        title="Brain",
        version=brain.__version__,
        description=DESCRIPTION.format(max_body_bytes=settings.max_body_bytes),
        lifespan=lifespan,
    )
    install_openapi_bounds(app, settings)
    install_error_handlers(app)
    # Outermost first: metrics see every answer; the schema guard precedes authentication
    # (tokens live in the schema); both answer before the body is read.
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(Authentication, public_paths=settings.auth_public_paths)
    app.add_middleware(SchemaGuard)
    app.add_middleware(RequestMetrics)
    app.add_middleware(Utf8Path)
    public, protected = split_public(health.router, settings.auth_public_paths)
    app.include_router(public)
    guarded = _guarded(settings)
    app.include_router(protected, dependencies=[Depends(current_principal)], **guarded)
    routers = (jobs, samples, events, plans, portraits, priorities, suggestions, cluster, savings)
    for module in routers:
        app.include_router(module.router, dependencies=[Depends(current_principal)], **guarded)
    app.include_router(admin.router, dependencies=[Depends(administrator)], **guarded)
    install_console(app)
    return app


def _guarded(settings: Settings) -> dict:
    """What every route behind authentication may answer besides its own responses."""
    too_large = f"The body is larger than BRAIN_MAX_BODY_BYTES ({settings.max_body_bytes:,} bytes)."
    return {"responses": {**AUTH_RESPONSES, 413: {"description": too_large}}}


def _build_state(settings: Settings) -> ServerState:
    pool = {} if settings.is_sqlite else {"pool_size": settings.pool_size}
    engine = make_engine(settings.database_url, **pool)
    session_factory = make_session_factory(engine)
    schema_gate = SchemaGate(engine, migrate.head_revision(settings.database_url))
    schema = schema_gate.status()
    if schema is not None and not schema.up_to_date:
        log.error("%s; until then the API answers 503 schema_out_of_date", schema.problem())
    leadership = elect(engine)
    read_session_factory = make_read_session_factory(engine)
    telemetry = Telemetry()
    telemetry.registry.register(
        PortraitMetrics(
            read_session_factory,
            settings.metrics_window_days,
            settings.metrics_owner_series,
            settings.metrics_cache_s,
        )
    )
    # Token checks only read: each statement on its own, no BEGIN and COMMIT round trips.
    verifier = TokenVerifier(read_session_factory, ttl_s=settings.token_cache_s)
    auth_policy = AuthPolicy(settings.auth, settings.host, verifier)
    report = auth_policy.report()
    if report["status"] == "open":
        log.warning("API authentication is off: %s", report["detail"])
    return ServerState(
        settings=settings,
        engine=engine,
        session_factory=session_factory,
        read_session_factory=read_session_factory,
        schema_gate=schema_gate,
        telemetry=telemetry,
        registry=load_registry(),
        leadership=leadership,
        auth_policy=auth_policy,
        plan_watch=PlanWatch(session_factory, PLAN_WATCH_INTERVAL_S),
        health_reporters={"leadership": leadership.report, "auth": auth_policy.report},
    )


logging.getLogger("brain").addHandler(logging.NullHandler())
