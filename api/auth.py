"""Bearer-token authentication and authorization for the REST API.

The middleware decides before the body is read, so an anonymous client cannot make
Brain parse a large body: 401 without a usable token, 403 when the token's scope is
below what the method needs (GET and HEAD: ``read``; anything else: ``write``). The
dependencies below then expose the caller to the routes and refuse cross-namespace
aggregates to namespace-restricted tokens; a job route finds jobs only among the
caller's namespaces (api.job_ref), so another namespace's job answers 404, exactly as
one that does not exist. The rules themselves live in brain.services.tokens, shared
with any other transport.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Security
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.exc import SQLAlchemyError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import error_body
from api.state import server_state
from brain.errors import Forbidden, Unauthorized
from brain.services.tokens import AuthPolicy, Principal, TokenScope, bearer_secret

log = logging.getLogger(__name__)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The API's own description is public, so a caller can find out how to authenticate.
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
DOCS_ASSETS = "/static-offline-docs/"
# The console (api.console) checks its own session cookie, with the same policy; the
# root only redirects to it.
CONSOLE_PATHS = frozenset({"/", "/ui"})
CONSOLE_PREFIX = "/ui/"

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="BearerToken",
    description="An API token from `brain token create`, sent as `Authorization: Bearer "
    "<token>`. Scopes: read (GET), write (also PUT, PATCH, POST), admin (everything). A "
    "server on loopback with no token created yet answers without one.",
)

AUTH_RESPONSES: dict[int | str, dict] = {
    401: {"description": "No token, or an unknown, expired or revoked one (`unauthorized`)."},
    403: {"description": "The token's scope or namespaces do not allow this (`forbidden`)."},
}


class Authentication:
    """ASGI middleware: authenticate and check the method's scope before the body."""

    def __init__(self, app: ASGIApp, public_paths: Iterable[str]) -> None:
        self.app = app
        self.public_paths = frozenset(public_paths) | DOCS_PATHS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._public(scope["path"]):
            await self.app(scope, receive, send)
            return
        policy: AuthPolicy = server_state(scope["app"]).auth_policy
        secret = _bearer_secret(scope)
        try:
            if policy.answers_from_memory(secret):
                principal = policy.authenticate(secret)
            else:
                principal = await run_in_threadpool(policy.authenticate, secret)
            needed = TokenScope.read if scope["method"] in SAFE_METHODS else TokenScope.write
            principal.require(needed, scope["method"])
        except Unauthorized as exc:
            body = error_body(exc.code, exc.message)
            headers = {"WWW-Authenticate": "Bearer"}
            await JSONResponse(body, status_code=401, headers=headers)(scope, receive, send)
            return
        except Forbidden as exc:
            await JSONResponse(error_body(exc.code, exc.message), 403)(scope, receive, send)
            return
        except SQLAlchemyError:
            log.exception("checking a token: database error, answered 503")
            body = error_body("database_unavailable", "the database cannot be reached; retry later")
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    def _public(self, path: str) -> bool:
        return (
            path in self.public_paths
            or path.startswith(DOCS_ASSETS)
            or path in CONSOLE_PATHS
            or path.startswith(CONSOLE_PREFIX)
        )


def _bearer_secret(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bearer_secret(value.decode("latin-1"))
    return None


async def current_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
) -> Principal:
    """The caller, as the middleware authenticated it (also documents the scheme)."""
    return request.state.principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


async def every_namespace(principal: CurrentPrincipal) -> None:
    """For answers that aggregate jobs across namespaces (portraits, suggestions)."""
    if principal.namespaces is not None:
        raise Forbidden(
            f"token {principal.name!r} is limited to namespaces "
            f"{', '.join(sorted(principal.namespaces))}; this answer spans every namespace"
        )


async def namespace_asked(request: Request, principal: CurrentPrincipal) -> None:
    """For aggregates a caller may narrow with ``?namespace=``: a token limited to
    namespaces reads them for one of its namespaces, and only so."""
    if principal.namespaces is None:
        return
    asked = request.query_params.get("namespace")
    if asked is None or asked not in principal.namespaces:
        raise Forbidden(
            f"token {principal.name!r} is limited to namespaces "
            f"{', '.join(sorted(principal.namespaces))}; this answer spans every namespace "
            "unless ?namespace= names one of them"
        )


async def administrator(principal: CurrentPrincipal) -> None:
    """For tokens and retention: an admin token valid for every namespace."""
    if not principal.allows(TokenScope.admin) or principal.namespaces is not None:
        raise Forbidden(
            f"token {principal.name!r} has scope {principal.scope}"
            + ("" if principal.namespaces is None else " limited to some namespaces")
            + "; this needs an admin token for every namespace"
        )


def split_public(router: APIRouter, public_paths: Iterable[str]) -> tuple[APIRouter, APIRouter]:
    """The router's routes answered without a token, and the others."""
    public, protected = APIRouter(), APIRouter()
    paths = frozenset(public_paths)
    for route in router.routes:
        (public if getattr(route, "path", None) in paths else protected).routes.append(route)
    return public, protected
