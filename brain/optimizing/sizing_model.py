"""A learned sizing model as optimizers see it: handed in through the context.

Optimizers stay pure: a service loads the model (``brain.learned_sizing``) and puts it
in ``OptimizerContext.sizing_model``; an optimizer builds a ``ResourceHistory`` per
role and resource from ``context.history`` and asks for a ``PeakForecast``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # context.py refers to SizingModel: no runtime import back
    from brain.optimizing.context import HistoricalJob, NodeUsage

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
    """A trained model of the next run's peak per resource (see ``brain.learned_sizing``)."""

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


def role_history(
    history: Sequence[HistoricalJob], role: str, resource: str, request: float | None
) -> ResourceHistory:
    """``resource`` of ``role`` over ``history`` (most recent first, as the context holds
    it), oldest first; per run the role's largest node's peak and the mean over its nodes,
    as ``brain backtest --from-db`` reads a run. Runs without the role (or, for GPU
    memory, without GPU samples) are left out."""
    peaks: list[float] = []
    means: list[float] = []
    requests: list[float | None] = []
    durations: list[float] = []
    highs: list[float] = []
    for past in reversed(history):
        nodes = past.role_nodes(role)
        if resource == "gpu_memory":
            nodes = [n for n in nodes if n.gpu_memory_max_mib is not None]
        if not nodes:
            continue
        peaks.append(max(_peak(n, resource) for n in nodes))
        means.append(sum(_mean(n, resource) for n in nodes) / len(nodes))
        asked = max(_request(n, resource) for n in nodes)
        requests.append(asked or None)
        seconds = past.duration_s
        durations.append(math.nan if seconds is None else seconds / 3600.0)
        if resource == "cpu":
            highs.append(max(n.cpu_max for n in nodes))
    return ResourceHistory(peaks, means, requests, durations, request or None, highs)


def _peak(node: NodeUsage, resource: str) -> float:
    if resource == "memory":
        return node.memory_max_mib
    if resource == "cpu":
        return node.cpu_p95
    return node.gpu_memory_max_mib or 0.0


def _mean(node: NodeUsage, resource: str) -> float:
    if resource == "memory":
        return node.memory_mean_mib
    if resource == "cpu":
        return node.cpu_mean
    return math.nan  # GPU memory's mean is not summarized


def _request(node: NodeUsage, resource: str) -> float:
    if resource == "memory":
        return node.requested.memory_mib
    if resource == "cpu":
        return node.requested.cpu
    return node.requested.gpu * (node.gpu_card_mib or 0.0)
