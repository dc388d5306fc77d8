"""A learned sizing model as optimizers see it: handed in through the context.

Optimizers stay pure: a service loads the model (``brain.recommending``) and puts it
in ``OptimizerContext.sizing_model``; an optimizer builds a ``ResourceHistory`` per
role and resource from ``context.history`` and asks for a ``PeakForecast``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# The resources a sizing model forecasts, with what their peak is: memory max (above
# it: OOM-killed), CPU 95th percentile (throttled), GPU memory max (out of GPU memory).
RESOURCES = ("memory", "cpu", "gpu_memory")


@dataclass(frozen=True)
class ResourceHistory:
    """One resource of one role over a workload's earlier runs, oldest first.

    ``peaks[i]`` is what run ``i``'s size had to cover (its largest node's), ``means[i]``
    its mean use, ``requests[i]`` what it asked for (None: unknown), ``durations_h[i]``
    how long it ran; ``request`` is what the run being sized asks for. ``highs[i]`` is
    the run's largest use when the peak judged is lower (CPU: its maximum, while the
    peak is its 95th percentile); empty means the peaks themselves.
    """

    peaks: Sequence[float]
    means: Sequence[float]
    requests: Sequence[float | None]
    durations_h: Sequence[float]
    request: float | None
    highs: Sequence[float] = ()


class PeakForecast(Protocol):
    """The calibrated distribution of the next run's peak of one resource."""

    def size_at_risk(self, risk: float) -> float | None:
        """The smallest size the next peak exceeds with probability at most ``risk``;
        None when the model cannot promise that risk (too few calibration runs)."""
        ...

    def risk_of(self, size: float) -> float:
        """The probability that the next run's peak exceeds ``size``."""
        ...


class SizingModel(Protocol):
    """A trained model of the next run's peak per resource (see ``brain.recommending``)."""

    version: str

    def forecast(self, resource: str, history: ResourceHistory) -> PeakForecast | None:
        """The forecast for ``resource`` (one of ``RESOURCES``); None when the model has
        none for it or the history says nothing (no runs and no request)."""
        ...

    def forecasts(
        self, resource: str, histories: Sequence[ResourceHistory]
    ) -> list[PeakForecast | None]:
        """``forecast`` for many histories at once (one batched prediction)."""
        ...
