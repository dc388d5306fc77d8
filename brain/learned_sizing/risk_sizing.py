"""From a forecast to a size and its stated risk: the one rule the optimizer and the
backtest share."""

from __future__ import annotations

import math
from dataclasses import dataclass

from brain.optimizing.sizing_model import PeakForecast


@dataclass(frozen=True)
class RiskSizing:
    size: float
    risk: float  # probability that the next peak exceeds ``size``
    capped: bool  # the request as given was smaller than the size at the wanted risk


def size_for(
    forecast: PeakForecast,
    risk: float,
    *,
    request: float | None,
    cap_at_request: bool,
    step: float,
) -> RiskSizing | None:
    """The smallest size (a multiple of ``step``) whose risk is at most ``risk``, capped
    at ``request`` when asked; None when the model cannot promise ``risk`` and there is
    no request to fall back on."""
    size = forecast.size_at_risk(risk)
    if size is None:
        if request is None:
            return None
        size = request
    size = math.ceil(size / step - 1e-9) * step
    capped = bool(cap_at_request and request and size > request)
    if capped:
        size = request
    return RiskSizing(size, forecast.risk_of(size), capped)
