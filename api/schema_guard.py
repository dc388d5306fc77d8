"""503 ``schema_out_of_date`` while the database's schema is not the one this code needs.

Without this, a never-migrated database answers every request with a bare 500
(``relation "jobs" does not exist``). Only the API under ``/api/`` is guarded: health,
metrics and the documentation keep answering, and ``/readyz`` reports the schema.
"""

from __future__ import annotations

import math
import threading
import time

from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body
from api.state import server_state
from brain.db.migrate import SchemaStatus, schema_status

GUARDED_PREFIX = "/api/"


class SchemaGate:
    """Whether the schema is current. Once it is, it stays so (a server never migrates
    backwards); until then it looks again at most every ``recheck_s``, so running
    ``brain db upgrade`` brings a waiting server up without a restart."""

    def __init__(self, engine: Engine, head: str | None, recheck_s: float = 1.0) -> None:
        self._engine = engine
        self._head = head
        self._recheck_s = recheck_s
        self._status: SchemaStatus | None = None  # None: not known (database unreachable)
        self._checked_at = -math.inf
        self._lock = threading.Lock()

    @property
    def current(self) -> bool:
        return self._status is not None and self._status.up_to_date

    def status(self) -> SchemaStatus | None:
        """The schema's status, read again if it is not current and the last look is old."""
        with self._lock:
            if self.current or time.monotonic() - self._checked_at < self._recheck_s:
                return self._status
            self._checked_at = time.monotonic()
            try:
                self._status = schema_status(self._engine, self._head)
            except SQLAlchemyError:
                self._status = None  # the request itself will meet database_unavailable
            return self._status


class SchemaGuard:
    """ASGI middleware answering 503 envelopes under /api/ while the schema is behind."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(GUARDED_PREFIX):
            gate: SchemaGate = server_state(scope["app"]).schema_gate
            if not gate.current:
                status = await run_in_threadpool(gate.status)
                if status is not None and not status.up_to_date:
                    body = error_body("schema_out_of_date", status.problem())
                    await JSONResponse(status_code=503, content=body)(scope, receive, send)
                    return
        await self.app(scope, receive, send)
