"""What ``brain serve`` runs, put together in one place.

One ``brain serve`` process runs the HTTP API (``api.app``) and, beside it, on the same
``ServerState`` (``api.state``):

- ``learned_models``: the learned recommender, retrained on a schedule
  (``BRAIN_TRAIN_INTERVAL_S``) and reloaded when another process trained it;
- ``dlrover_grpc``: DLRover's ``brain.Brain`` gRPC service (``BRAIN_GRPC_PORT``);
- ``prometheus_collector``: the collector of running jobs' load
  (``BRAIN_PROMETHEUS_URL``);
- ``summary_refresher``: job summaries kept current, then raw-sample retention
  (``BRAIN_SUMMARY_INTERVAL_S``, ``BRAIN_RETENTION_DAYS``).

Each part starts only when its setting asks for it, in every worker process; work done
once per database runs while the process leads (brain.leadership). Third-party hooks
(entry point group ``brain.app_hooks``) run after them, called with the app.

The ``brain`` program (``api.main``) runs ``serve_app``; nothing else wires these parts
together (tests/test_layering.py).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from fastapi import FastAPI

from api.app import Part, create_app
from api.dlrover.auth import TokenInterceptor
from api.dlrover.server import elastic_job_lookup
from api.dlrover.server import start as start_grpc
from api.state import ServerState
from brain.config import Settings
from brain.plugins import APP_HOOKS_GROUP, load_callables
from brain.retraining.service import start_learned_models
from brain.savings.stored import store_pending_savings
from brain.summaries.refresher import start_refresher
from collectors.service import CONFIG_ERRORS, CollectorService

log = logging.getLogger(__name__)


def learned_models(state: ServerState) -> None:
    state.sizing_models, periodics = start_learned_models(state.settings, state.leadership.leading)
    state.shutdown_hooks.extend(periodic.stop for periodic in periodics)


def dlrover_grpc(state: ServerState) -> None:
    settings = state.settings
    if settings.grpc_port is None:
        return
    running = start_grpc(
        settings,
        state.session_factory,
        state.registry,
        state.telemetry,
        settings.grpc_port,
        # The REST API's token rules (api/dlrover/auth.py), on the call metadata, unless
        # BRAIN_GRPC_AUTH=false (DLRover 0.6.1 masters send no metadata).
        interceptors=[TokenInterceptor(state.auth_policy)] if settings.grpc_auth else [],
        # The model the REST API uses, read at each call: both protocols give the same
        # create plan, also after a retraining swaps it.
        sizing_model=state.current_sizing_model,
        elastic_jobs=elastic_job_lookup(settings),
    )
    state.grpc_server = running
    state.shutdown_hooks.append(running.stop)


def prometheus_collector(state: ServerState) -> None:
    settings = state.settings.collector
    if not settings.prometheus_url:
        return
    try:
        backfill_s = settings.discovery_backfill_s if settings.discovery else 0
        service = CollectorService(
            settings,
            state.session_factory,
            state.telemetry,
            engine=state.engine,
            start_backfill=timedelta(seconds=backfill_s) if backfill_s > 0 else None,
        )
    except CONFIG_ERRORS as exc:
        log.error("Prometheus collector not started, configuration error: %s", exc)
        message = f"configuration: {exc}"
        state.health_reporters["collector"] = lambda: {
            "status": "degraded",
            "detail": {"error": message},
        }
        return
    state.collector = service
    state.health_reporters["collector"] = service.health
    state.shutdown_hooks.append(service.stop)
    service.start()


def summary_refresher(state: ServerState) -> None:
    # Each new final summary gets the savings report's replay stored with it.
    def store_replays() -> None:
        store_pending_savings(state.session_factory, state.settings, state.registry)

    refresher = start_refresher(
        state.settings, state.session_factory, state.leadership.leading, store_replays
    )
    if refresher is not None:
        state.shutdown_hooks.append(refresher.stop)


# In start order: the model exists before the gRPC service can be asked to size a job.
PARTS: tuple[Part, ...] = (learned_models, dlrover_grpc, prometheus_collector, summary_refresher)


def serve_app(settings: Settings) -> FastAPI:
    """The app one ``brain serve`` process runs: the HTTP API with every part above and
    the third-party hooks."""
    hooks = list(load_callables(APP_HOOKS_GROUP).values())
    return create_app(settings, parts=PARTS, on_startup=hooks)
