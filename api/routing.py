"""The route class every router uses: strict JSON and the site's input bounds.

Python's JSON parser accepts ``NaN``, ``Infinity`` and ``-Infinity``, which are not
JSON; once stored they poison every later sum and read back as null. They are refused
while parsing, so no field (not even free-form optimizer settings) can carry one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from api.schemas.bounds import bounds_in_force


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


class InputRoute(APIRoute):
    """Parses bodies strictly and validates them against the app's plausible bounds."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict_handler(request: Request) -> Response:
            strict = StrictJsonRequest(request.scope, request.receive)
            with bounds_in_force(request.app.state.settings.input_bounds):
                return await handler(strict)

        return strict_handler
