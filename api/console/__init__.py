"""The console: read-only web pages over Brain's portraits, plans and suggestions, served
by Brain itself at /ui/ (templates and vendored assets in this package; no CDN)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from api.console.pages import router
from api.console.session import SignInRequired, sign_in_location

STATIC = Path(__file__).parent / "static"
# Paths the API's bearer-token middleware leaves to the console, which checks its cookie.
PREFIX = "/ui"


def install(app: FastAPI) -> None:
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="console-static")
    app.include_router(router)
    app.add_exception_handler(SignInRequired, _to_sign_in)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/", status_code=307)

    @app.get(PREFIX, include_in_schema=False)
    async def bare() -> RedirectResponse:
        return RedirectResponse(f"{PREFIX}/", status_code=307)


async def _to_sign_in(_request: Request, exc: SignInRequired) -> RedirectResponse:
    return RedirectResponse(sign_in_location(exc.back_to), status_code=303)
