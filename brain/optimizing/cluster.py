"""The cluster as the running stage sees it: free capacity, pending demand, and the
running jobs that could give workers back when the cluster is short.

The service builds a ``ClusterView`` from the freshest recorded state (collector or push)
and hands it in the optimizer context; the guard bounds every plan's growth by the
cluster's room and the ``cluster_shortage`` optimizer ranks the peers. All pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import TYPE_CHECKING, Any

from brain.domain import ClusterState, Resources

if TYPE_CHECKING:  # the context imports this module
    from brain.optimizing.context import SpeedSample

RESOURCES = ("cpu", "memory_mib", "gpu")


@dataclass(frozen=True)
class ElasticJob:
    """A running job as the cluster-aware running stage ranks it.

    ``floor`` is the worker count it keeps (its ``min_count``; without one, the count it
    was sized to before the running stage grew it): workers above it are elastic.
    ``marginal_gain`` is the share of the job's speed its last worker brings: measured
    across its last two worker counts when the speed window holds both
    (``gain_measured``), else ``1 / workers`` (linear scaling, an upper bound).
    ``changed_at`` is when an applied plan last changed its worker count.
    """

    uid: str
    workers: int
    floor: int
    worker: Resources
    marginal_gain: float
    gain_measured: bool = False
    changed_at: datetime | None = None
    # Evidence names a peer only when it shares the plan's namespace.
    namespace: str | None = None

    @property
    def elastic(self) -> int:
        return max(self.workers - self.floor, 0)


@dataclass(frozen=True)
class ClusterView:
    """The cluster state a plan uses, the margins by which pending demand must exceed
    free capacity for the cluster to count as short, and (only while it is short) the
    running jobs that could give workers back."""

    state: ClusterState
    short_margin: Resources = Resources()
    peers: tuple[ElasticJob, ...] = ()

    def free(self, resource: str) -> float | None:
        return getattr(self.state, f"free_{resource}")

    def pending(self, resource: str) -> float | None:
        return getattr(self.state, f"pending_{resource}")

    def room(self) -> dict[str, float]:
        """Per resource with a known free amount: free minus pending demand (unknown
        pending demand counts as none). Negative: more is waiting than is free."""
        room = {}
        for resource in RESOURCES:
            free = self.free(resource)
            if free is not None:
                room[resource] = free - (self.pending(resource) or 0.0)
        return room

    def shortfall(self) -> dict[str, float]:
        """Per resource where pending demand exceeds free capacity by more than the
        margin: by how much it exceeds it. Empty: the cluster is not short."""
        short = {}
        for resource in RESOURCES:
            free, pending = self.free(resource), self.pending(resource)
            if free is None or pending is None:
                continue
            if pending - free > getattr(self.short_margin, resource):
                short[resource] = pending - free
        return short

    def evidence(self) -> dict[str, Any]:
        """The state as a plan's reason records it."""
        s = self.state
        return {
            "cluster_source": s.source,
            "cluster_ts": s.ts.isoformat().replace("+00:00", "Z"),
            "free": {r: self.free(r) for r in RESOURCES},
            "pending": {r: self.pending(r) for r in RESOURCES},
            "pending_pods": s.pending_pods,
            "queued_jobs": s.queued_jobs,
            "shortfall": self.shortfall(),
        }

    def summary(self) -> str:
        """One line: the state's source and time, free and pending amounts."""

        def amounts(get) -> str:
            return ", ".join(
                f"{_fmt(get(r))} {unit}"
                for r, unit in zip(RESOURCES, ("cores", "MiB", "GPUs"), strict=True)
            )

        return (
            f"cluster state from {self.state.source} at "
            f"{self.state.ts.isoformat().replace('+00:00', 'Z')}: free {amounts(self.free)}; "
            f"pending {amounts(self.pending)}"
        )


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def marginal_gain(speed: Sequence[SpeedSample], workers: int) -> tuple[float, bool]:
    """The share of the job's speed its last worker brings, and whether it was measured.

    Measured when the speed window holds two worker counts: with mean speeds ``s_n`` at
    the current count ``n`` and ``s_m`` at the previous one ``m``, it is
    ``(s_n - s_m) / (n - m) / s_n`` (negative when the added workers slowed the job).
    Otherwise ``1 / workers``: what the last worker would bring under linear scaling, an
    upper bound for the sub-linear scaling of real jobs, so measured poor scalers rank
    first.
    """
    runs = [(count, [s.steps_per_sec for s in group]) for count, group in groupby(speed, _workers)]
    if len(runs) >= 2:
        (n, current), (m, previous) = runs[-1], runs[-2]
        now, before = sum(current) / len(current), sum(previous) / len(previous)
        if now > 0:
            return (now - before) / (n - m) / now, True
    return (1.0 / workers if workers > 0 else 0.0), False


def _workers(sample: SpeedSample) -> int:
    return sample.workers
