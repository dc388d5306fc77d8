"""The FastAPI application factory. Nothing is built at import time."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

import brain
from api.errors import install_error_handlers
from api.metrics_middleware import RequestMetrics
from api.routers import events, health, jobs, plans, portraits, samples, suggestions
from api.schema_guard import SchemaGate, SchemaGuard
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.optimizing import load_registry
from brain.telemetry import Telemetry

DESCRIPTION = """Brain stores the profiles of distributed training jobs (nodes, usage time
series, training speed, events) and turns them into resource plans.

Units are in the field names: `cpu` in cores, `memory_mib` in MiB, `gpu` as a count
(fractional allowed), utilizations as fractions 0..1, timestamps RFC 3339 (returned in UTC).
Every error body is `{"error": {"code", "message", "field"}}`."""

Startup = Callable[[FastAPI], None]
log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None, on_startup: list[Startup] | None = None
) -> FastAPI:
    """Build the app; the lifespan creates the engine and disposes of it at shutdown.

    ``on_startup`` hooks run inside the lifespan once the engine exists (the CLI uses
    one to start the Prometheus collector).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings or Settings()
        app.state.engine = make_engine(app.state.settings.database_url)
        app.state.session_factory = make_session_factory(app.state.engine)
        app.state.schema_gate = SchemaGate(
            app.state.engine, migrate.head_revision(app.state.settings.database_url)
        )
        schema = app.state.schema_gate.status()
        if schema is not None and not schema.up_to_date:
            log.error("%s; until then the API answers 503 schema_out_of_date", schema.problem())
        app.state.telemetry = Telemetry()
        app.state.registry = load_registry()
        app.state.health_reporters = {}
        app.state.shutdown_hooks = []
        for hook in on_startup or ():
            hook(app)
        # Everything built so far lives as long as the process: keep it out of the
        # cyclic GC's full collections, which otherwise pause requests for ~100 ms.
        gc.freeze()
        try:
            yield
        finally:
            for stop in reversed(app.state.shutdown_hooks):
                stop()
            app.state.engine.dispose()

    # /docs and /redoc load their assets from the package (offline), not from a CDN.
    app = FastAPIOffline(
        title="Brain",
        version=brain.__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(SchemaGuard)
    app.add_middleware(RequestMetrics)
    for module in (health, jobs, samples, events, plans, portraits, suggestions):
        app.include_router(module.router)
    return app


logging.getLogger("brain").addHandler(logging.NullHandler())
