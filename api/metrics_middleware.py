"""Request counts and latencies for /metrics, as a plain ASGI middleware.

Starlette's BaseHTTPMiddleware runs every request through its own task and streams,
a cost on every request; wrapping ``send`` to catch the status is all that is needed here.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.state import server_state


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            # The router puts the matched route in the (shared) scope.
            template = getattr(scope.get("route"), "path", "unmatched")
            telemetry = server_state(scope["app"]).telemetry
            telemetry.requests.labels(scope["method"], template, str(status)).inc()
            telemetry.latency.labels(scope["method"], template).observe(
                time.perf_counter() - started
            )
