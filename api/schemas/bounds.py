"""The site's plausible bounds, as the request schemas see them while validating.

The bounds are settings, but FastAPI validates bodies without any context of ours; the
route class (api/routing.py) puts the app's bounds in force around each request, and
the validators below read them. Outside a request the defaults apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from pydantic import AfterValidator

from api.openapi_bounds import setting_mark
from brain.bounds import InputBounds

_DEFAULTS = InputBounds()  # frozen
_in_force: ContextVar[InputBounds] = ContextVar("input_bounds", default=_DEFAULTS)


@contextmanager
def bounds_in_force(bounds: InputBounds) -> Iterator[None]:
    token = _in_force.set(bounds)
    try:
        yield
    finally:
        _in_force.reset(token)


def plausible_setting(quantity: str, per_job: bool = False) -> str:
    """The setting that bounds ``quantity`` (an InputBounds field); for a whole job's
    limit, that bound times the plausible node count."""
    setting = f"BRAIN_PLAUSIBLE_{quantity.upper()}"
    return f"{setting} x BRAIN_PLAUSIBLE_NODES" if per_job else setting


def plausible_mark(quantity: str, per_job: bool = False) -> dict[str, str]:
    """The schema mark (api.openapi_bounds) by which the OpenAPI states the bound that
    ``at_most`` checks, as configured."""
    return setting_mark(plausible_setting(quantity, per_job))


def at_most(quantity: str, per_job: bool = False) -> AfterValidator:
    """Reject a value above the plausible bound ``quantity`` (an InputBounds field), or
    for a whole job's limit above that bound times the plausible node count."""
    where = plausible_setting(quantity, per_job)

    def check(value: float) -> float:
        bounds = _in_force.get()
        limit = getattr(bounds, quantity) * (bounds.nodes if per_job else 1)
        if value > limit:
            raise ValueError(f"{value:g} is above the plausible maximum {limit:g} ({where})")
        return value

    return AfterValidator(check)


def not_before_floor(value: datetime) -> datetime:
    floor = _in_force.get().min_timestamp
    if value < floor:
        raise ValueError(f"{value.isoformat()} is before {floor.isoformat()} (BRAIN_MIN_TIMESTAMP)")
    return value
