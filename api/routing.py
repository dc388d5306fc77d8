"""The route classes every router uses: blocking handlers that never deadlock the pools,
strict JSON and the site's input bounds.

FastAPI runs a plain ``def`` handler on AnyIO's thread pool (40 threads) and then, in a
second trip to that pool, validates its response, while the request's transaction
(committed when the handler's dependencies exit, after that validation) still holds
its database connection. Under load every thread could be a handler waiting for a
connection while every connection was held by a finished handler waiting for a thread:
nothing would run until the pool timed out. ``OffloadedRoute``
hands FastAPI an ``async`` wrapper that runs the handler on the thread pool itself, so
the response is validated on the event loop and no request waits for a thread while it
holds a connection.

Python's JSON parser accepts ``NaN``, ``Infinity`` and ``-Infinity``, which are not
JSON; once stored they poison every later sum and read back as null. They are refused
while parsing, so no field (not even free-form optimizer settings) can carry one.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from api.deps import finish_request, upgrade_to_transaction
from api.schemas.bounds import bounds_in_force
from api.state import server_state
from brain.db.engine import ReadOnlySessionError


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number; numbers must be finite", name, 0)


class StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                text = body.decode()
            except UnicodeDecodeError as exc:  # FastAPI would answer a bare 400
                raise json.JSONDecodeError("the body is not UTF-8", repr(body[:20]), 0) from exc
            self._json = json.loads(text, parse_constant=_refuse_constant)
        return self._json


def _on_thread_pool(endpoint: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
    # functools.wraps keeps the signature and annotations FastAPI reads its parameters from.
    def run_and_commit(*args: Any, **kwargs: Any) -> Any:
        # The transaction ends in this thread: the request then holds no connection
        # while it waits for the loop, and needs no second trip to the pool to commit.
        try:
            try:
                result = endpoint(*args, **kwargs)
            except ReadOnlySessionError:
                # A GET that must write after all, and may: again, in a transaction.
                if not upgrade_to_transaction(kwargs):
                    raise
                result = endpoint(*args, **kwargs)
        except BaseException:
            finish_request(kwargs, commit=False)
            raise
        finish_request(kwargs, commit=True)
        return result

    @functools.wraps(endpoint)
    async def offloaded(*args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(run_and_commit, *args, **kwargs)

    return offloaded


class OffloadedRoute(APIRoute):
    """Runs a blocking handler on the thread pool and the rest of the request on the loop."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint) and not inspect.isgeneratorfunction(endpoint):
            endpoint = _on_thread_pool(endpoint)
        super().__init__(path, endpoint, **kwargs)


class InputRoute(OffloadedRoute):
    """Parses bodies strictly and validates them against the app's plausible bounds."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            strict = StrictJsonRequest(request.scope, request.receive)
            with bounds_in_force(server_state(request.app).settings.input_bounds):
                return await handler(strict)

        return strict_handler
