"""The global request-size limit (``BRAIN_MAX_BODY_BYTES``): 413 before any parsing.

A declared ``Content-Length`` above the limit is refused before a byte is read; a body
without one (chunked) is counted as it arrives and refused as soon as it passes the limit.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.errors import error_body


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; FastAPI passes HTTP exceptions through its body
    reading untouched, so the app's handler answers with the 413 envelope."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413, f"the request body is larger than {limit} bytes (BRAIN_MAX_BODY_BYTES)"
        )


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            exc = BodyTooLarge(self.max_bytes)
            body = error_body("payload_too_large", exc.detail)
            await JSONResponse(body, status_code=413)(scope, receive, send)
            return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        await self.app(scope, counted_receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed length itself
    return None
