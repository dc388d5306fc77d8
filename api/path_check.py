"""400 for a path that is not UTF-8 once percent-decoded.

The server decodes such bytes to U+FFFD, so ``/jobs/%ff`` and ``/jobs/%fe`` would both
name the job ``\\ufffd``: two different uids colliding into one. Refused before routing.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body


class Utf8Path:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        if raw and b"%" in raw:
            try:
                unquote_to_bytes(raw.split(b"?", 1)[0]).decode("utf-8")
            except UnicodeDecodeError:
                body = error_body("bad_request", "the path is not UTF-8 once percent-decoded")
                await JSONResponse(body, status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)
