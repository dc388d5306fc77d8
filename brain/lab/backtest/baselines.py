"""What a user would do without Brain: keep the request, or apply a simple rule.

The simple rules look at the same usage the backtest judges (peak memory, 95th
percentile CPU, peak GPU memory) over the last ``k`` runs and add a fixed margin.
They are not optimizers: nobody runs them in the service, they are the yardstick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from brain.replay.resources import RESOURCES
from brain.replay.runs import Run, Submission

ALL_RESOURCES = frozenset(r.name for r in RESOURCES)


@dataclass(frozen=True)
class RequestAsGiven:
    """The size the run was submitted with."""

    name: str = "request"
    resources: frozenset[str] = ALL_RESOURCES

    def recommend(self, job: Submission, history: Sequence[Run]) -> Mapping[str, float | None]:
        return {r: job.request(r) for r in self.resources}


@dataclass(frozen=True)
class LastRunsRule:
    """``margin`` x a statistic of the last ``k`` runs' peaks; no opinion without history.

    ``statistic`` is ``"max"`` or ``"p90"`` (90th percentile, linear interpolation).
    """

    statistic: str
    k: int
    margin: float
    resources: frozenset[str] = ALL_RESOURCES

    def __post_init__(self) -> None:
        if self.statistic not in ("max", "p90"):
            raise ValueError(f"unknown statistic {self.statistic!r}")
        if self.k < 1 or self.margin <= 0:
            raise ValueError("k must be at least 1 and the margin positive")

    @property
    def name(self) -> str:
        return f"{self.statistic}_last{self.k}_x{self.margin:g}"

    @property
    def family(self) -> str:
        """The name without the margin: one curve when the margin is swept."""
        return f"{self.statistic}_last{self.k}"

    def recommend(self, job: Submission, history: Sequence[Run]) -> Mapping[str, float | None]:
        recent = history[-self.k :]
        return {r: self._size([run.peak(r) for run in recent]) for r in self.resources}

    def _size(self, peaks: list[float | None]) -> float | None:
        known = [p for p in peaks if p is not None]
        if not known:
            return None
        if self.statistic == "max":
            return self.margin * max(known)
        return self.margin * percentile(known, 0.9)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile with linear interpolation (numpy's default), for short lists."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
