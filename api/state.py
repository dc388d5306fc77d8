"""What one ``brain serve`` process holds while it runs, as one typed object.

The app's lifespan (``api.app``) builds a ``ServerState`` and keeps it as
``app.state.server``; the parts that run beside the HTTP API (``api.server``) fill in
what they add. Code that has the app or a request reads it through ``server_state``,
so every field has one type a reader and a type checker can see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from brain.config import Settings
from brain.leadership import Leadership
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing_model import SizingModel
from brain.services.tokens import AuthPolicy
from brain.telemetry import Telemetry

if TYPE_CHECKING:
    from api.dlrover.server import RunningServer
    from api.plan_watch import PlanWatch
    from api.schema_guard import SchemaGate
    from brain.retraining.service import ModelHolder
    from collectors.service import CollectorService

# A /readyz section: {"status": "ok" | "degraded" | ..., "detail": {...}}.
HealthReporter = Callable[[], dict[str, Any]]


@dataclass
class ServerState:
    settings: Settings
    engine: Engine
    # Transactions (writes), and sessions that read without one (GET and HEAD).
    session_factory: sessionmaker[Session]
    read_session_factory: sessionmaker[Session]
    schema_gate: SchemaGate
    telemetry: Telemetry
    registry: OptimizerRegistry
    # Whether this process runs the work done once per database (brain.leadership).
    leadership: Leadership
    auth_policy: AuthPolicy
    plan_watch: PlanWatch
    # /readyz sections by name.
    health_reporters: dict[str, HealthReporter] = field(default_factory=dict)
    # Called in reverse order at shutdown, before the engine is disposed of.
    shutdown_hooks: list[Callable[[], None]] = field(default_factory=list)
    # Set by the parts that run them (api.server); None when not running.
    sizing_models: ModelHolder | None = None
    collector: CollectorService | None = None
    grpc_server: RunningServer | None = None

    def current_sizing_model(self) -> SizingModel | None:
        """The learned recommender loaded now (None: none trained yet, or the learned
        model part not running); read at each call, so a retrained model is used at
        once by both the REST API and the gRPC service."""
        holder = self.sizing_models
        return None if holder is None else holder.current


def server_state(app: Any) -> ServerState:
    """The state of the running app (``request.app`` or ``scope["app"]``)."""
    return app.state.server
