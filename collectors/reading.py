"""Asking Prometheus: the range queries of one group of jobs, and the cluster's free
capacity. Everything of a group is read before anything is written, so a failure (a
``PrometheusError`` from the client) leaves no half cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from collectors.client import PrometheusClient, Series
from collectors.queries import (
    NODE_FREE_CPU,
    NODE_FREE_MEMORY_MIB,
    OOM_SIGNAL,
    SAMPLE_SIGNALS,
    QuerySet,
    to_brain_unit,
)


@dataclass(frozen=True)
class GroupAnswers:
    """``samples``: the series of each sample signal from the group's first point;
    ``oom``: the OOM-kill counters from one step earlier (so a kill at the first point is
    seen as a rise)."""

    samples: Mapping[str, Sequence[Series]]
    oom: Sequence[Series]


@dataclass(frozen=True)
class ClusterCapacity:
    """Free capacity summed over the cluster's nodes (node-exporter)."""

    nodes: int
    free_cpu: float
    free_memory_mib: float


class SignalReader:
    """Sends the queries of one cycle; ``sent`` counts them, failed ones included."""

    def __init__(self, client: PrometheusClient, queries: QuerySet, step_s: int) -> None:
        self.client = client
        self.queries = queries
        self.step_s = step_s
        self.sent = 0

    def read_group(self, start: datetime, end: datetime) -> GroupAnswers:
        samples = {signal: self._range(signal, start, end) for signal in SAMPLE_SIGNALS}
        before = start - timedelta(seconds=self.step_s)
        return GroupAnswers(samples=samples, oom=self._range(OOM_SIGNAL, before, end))

    def free_capacity(self, at: datetime) -> ClusterCapacity:
        return capacity_of(
            self._instant(NODE_FREE_CPU, at), self._instant(NODE_FREE_MEMORY_MIB, at)
        )

    def _range(self, signal: str, start: datetime, end: datetime) -> list[Series]:
        self.sent += 1
        return self.client.query_range(self.queries.pod_query(signal), start, end, self.step_s)

    def _instant(self, signal: str, at: datetime) -> list[Series]:
        self.sent += 1
        return self.client.query(self.queries.node_query(signal), at)


def capacity_of(free_cpu: Sequence[Series], free_memory: Sequence[Series]) -> ClusterCapacity:
    """Sum the per-node answers (one series per node, told apart by ``instance``)."""
    nodes = {s.labels.get("instance", "?") for s in [*free_cpu, *free_memory] if s.points}
    return ClusterCapacity(
        nodes=len(nodes),
        free_cpu=round(_total(NODE_FREE_CPU, free_cpu), 3),
        free_memory_mib=round(_total(NODE_FREE_MEMORY_MIB, free_memory), 1),
    )


def _total(signal: str, series_list: Sequence[Series]) -> float:
    return sum(to_brain_unit(signal, s.points[0][1]) for s in series_list if s.points)
