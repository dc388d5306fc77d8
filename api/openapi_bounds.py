"""The OpenAPI document states this server's bounds, not the defaults.

Most input bounds are settings (``BRAIN_PLAUSIBLE_*``, ``BRAIN_MIN_TIMESTAMP``,
``BRAIN_MAX_BATCH_POINTS``), but the request models are built once, at import, with
the fixed ceilings a site may raise them to. Each bound a setting decides carries a
mark (``x-brain-setting``: the setting's name, or ``A x B`` for a product of two) in
the schema; when the app builds its OpenAPI document, every mark gets the value
configured for that app: a number schema's ``maximum``, and a sentence in the
description. A client generated from the document then refuses what this server
refuses, and a reader sees this server's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI

from brain.config import Settings

SETTING_MARK = "x-brain-setting"
PRODUCT = " x "
ENV_PREFIX = "BRAIN_"


def setting_mark(expression: str) -> dict[str, str]:
    """The mark of a bound set by a setting (``BRAIN_X``) or by a product of settings
    (``BRAIN_X x BRAIN_Y``), for a field's ``json_schema_extra`` or a response."""
    return {SETTING_MARK: expression}


def configured_value(settings: Settings, expression: str) -> float | int | datetime:
    """The value ``expression`` (a mark) has under ``settings``."""
    names = expression.split(PRODUCT)
    values = [getattr(settings, name.removeprefix(ENV_PREFIX).lower()) for name in names]
    if len(values) == 1:
        return values[0]
    product = 1.0
    for value in values:
        product *= value
    return product


def state_configured_bounds(document: dict[str, Any], settings: Settings) -> None:
    """Give every marked bound of ``document`` (in place) its configured value."""
    for node in _marked(document):
        expression = node[SETTING_MARK]
        value = configured_value(settings, expression)
        if isinstance(value, datetime):
            said = f"Not before {_instant(value)} on this server ({expression})."
        elif "maximum" in node:
            node["maximum"] = value
            said = f"At most {_number(value)} on this server ({expression})."
        else:
            said = f"{expression} is {_number(value)} on this server."
        described = node.get("description", "").rstrip()
        node["description"] = f"{described} {said}" if described else said


def install(app: FastAPI, settings: Settings) -> None:
    """Make ``app.openapi()`` state ``settings``' bounds (built once, then cached)."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            state_configured_bounds(build(), settings)
        return app.openapi_schema

    app.openapi = openapi


def _marked(node: Any):
    if isinstance(node, dict):
        if isinstance(node.get(SETTING_MARK), str):
            yield node
        for child in node.values():
            yield from _marked(child)
    elif isinstance(node, list):
        for child in node:
            yield from _marked(child)


def _number(value: float | int) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _instant(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
