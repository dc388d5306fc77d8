"""Request-scoped dependencies, as ``Annotated`` aliases for handler signatures.

The request owns the transaction: ``SessionDep`` opens one, commits it when the
handler returns and rolls it back when it raises, so handlers and services never
commit (services add and flush, and take a savepoint where they race). The commit
happens before the response is sent (``scope="function"``): a client never sees a
success for a write that did not commit, and background tasks see the write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.datastructures import State

from brain.config import Settings
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing import SizingModel
from brain.telemetry import Telemetry

_AFTER_COMMIT = "after_commit"


def session_in_transaction(request: Request) -> Iterator[Session]:
    with request.app.state.session_factory() as session:
        with session.begin():
            yield session
        for callback in session.info.pop(_AFTER_COMMIT, ()):
            callback()


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the request's transaction has committed (e.g. count what
    was stored only when it was)."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


# Plain reads of app state: async, so they skip the thread-pool hop of sync dependencies.
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_telemetry(request: Request) -> Telemetry:
    return request.app.state.telemetry


async def get_registry(request: Request) -> OptimizerRegistry:
    return request.app.state.registry


SessionDep = Annotated[Session, Depends(session_in_transaction, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
TelemetryDep = Annotated[Telemetry, Depends(get_telemetry)]
RegistryDep = Annotated[OptimizerRegistry, Depends(get_registry)]


def current_sizing_model(state: State) -> SizingModel | None:
    """The learned recommender ``brain serve`` loaded into the app's state (None: none
    trained yet); read at each call, so a retrained model is used at once by both the
    REST API and the gRPC service."""
    holder = getattr(state, "sizing_models", None)
    return None if holder is None else holder.current


async def get_sizing_model(request: Request) -> SizingModel | None:
    return current_sizing_model(request.app.state)


SizingModelDep = Annotated[SizingModel | None, Depends(get_sizing_model)]
