"""Request-scoped dependencies.

Handlers that write call ``session.commit()`` themselves before answering, so a client
never sees a success for a write that did not commit; anything uncommitted is rolled
back when the session closes.
"""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import Request
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.optimizing import OptimizerRegistry
from brain.telemetry import Telemetry


def get_session(request: Request) -> Iterator[Session]:
    session: Session = request.app.state.session_factory()
    try:
        yield session
    finally:
        session.close()


# Plain reads of app state: async, so they skip the thread-pool hop of sync dependencies.
async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_telemetry(request: Request) -> Telemetry:
    return request.app.state.telemetry


async def get_registry(request: Request) -> OptimizerRegistry:
    return request.app.state.registry
