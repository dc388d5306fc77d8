"""Asking Prometheus: the range queries of one group of jobs, and the cluster's state
(free capacity, pending demand). Everything of a group is read before anything is
written, so a failure (a ``PrometheusError`` from the client) leaves no half cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from brain.domain import ClusterState
from collectors.client import PrometheusClient, Series
from collectors.queries import (
    NODE_FREE_CPU,
    NODE_FREE_GPU,
    NODE_FREE_MEMORY_MIB,
    OOM_SIGNAL,
    PENDING_CPU,
    PENDING_GPU,
    PENDING_MEMORY_MIB,
    PENDING_PODS,
    QuerySet,
    to_brain_unit,
)

# The source named in stored cluster states and in the ingest metrics.
SOURCE = "prometheus"


@dataclass(frozen=True)
class GroupAnswers:
    """``samples``: the series of each sample signal from the group's first point;
    ``oom``: the OOM-kill counters from one step earlier (so a kill at the first point is
    seen as a rise)."""

    samples: Mapping[str, Sequence[Series]]
    oom: Sequence[Series]


@dataclass(frozen=True)
class ClusterAnswers:
    """The instant answers of the cluster signals: per node (free) or one series each
    (pending)."""

    free_cpu: Sequence[Series]
    free_memory: Sequence[Series]
    free_gpu: Sequence[Series]
    pending_pods: Sequence[Series]
    pending_cpu: Sequence[Series]
    pending_memory: Sequence[Series]
    pending_gpu: Sequence[Series]


class SignalReader:
    """Sends the queries of one cycle; ``sent`` counts them, failed ones included."""

    def __init__(self, client: PrometheusClient, queries: QuerySet, step_s: int) -> None:
        self.client = client
        self.queries = queries
        self.step_s = step_s
        self.sent = 0

    def read_group(self, start: datetime, end: datetime) -> GroupAnswers:
        samples = {
            signal: self._range(signal, start, end) for signal in self.queries.sample_signals
        }
        before = start - timedelta(seconds=self.step_s)
        return GroupAnswers(samples=samples, oom=self._range(OOM_SIGNAL, before, end))

    def cluster_state(self, at: datetime) -> ClusterState:
        answers = ClusterAnswers(
            free_cpu=self._instant(NODE_FREE_CPU, at),
            free_memory=self._instant(NODE_FREE_MEMORY_MIB, at),
            free_gpu=self._instant(NODE_FREE_GPU, at),
            pending_pods=self._instant(PENDING_PODS, at),
            pending_cpu=self._instant(PENDING_CPU, at),
            pending_memory=self._instant(PENDING_MEMORY_MIB, at),
            pending_gpu=self._instant(PENDING_GPU, at),
        )
        return cluster_state_of(answers, at)

    def _range(self, signal: str, start: datetime, end: datetime) -> list[Series]:
        self.sent += 1
        return self.client.query_range(self.queries.pod_query(signal), start, end, self.step_s)

    def _instant(self, signal: str, at: datetime) -> list[Series]:
        self.sent += 1
        return self.client.query(self.queries.cluster_query(signal), at)


def cluster_state_of(answers: ClusterAnswers, at: datetime) -> ClusterState:
    """Sum the answers in Brain's units; ``None`` where nothing answered (the exporter is
    missing). Nodes are node-exporter's, told apart by ``instance``."""
    free = [*answers.free_cpu, *answers.free_memory]
    pods = _total(PENDING_PODS, answers.pending_pods)
    return ClusterState(
        source=SOURCE,
        ts=at,
        nodes=len({s.labels.get("instance", "?") for s in free if s.points}),
        free_cpu=_total(NODE_FREE_CPU, answers.free_cpu, 3),
        free_memory_mib=_total(NODE_FREE_MEMORY_MIB, answers.free_memory, 1),
        free_gpu=_total(NODE_FREE_GPU, answers.free_gpu, 3),
        pending_pods=None if pods is None else int(pods),
        pending_cpu=_total(PENDING_CPU, answers.pending_cpu, 3),
        pending_memory_mib=_total(PENDING_MEMORY_MIB, answers.pending_memory, 1),
        pending_gpu=_total(PENDING_GPU, answers.pending_gpu, 3),
    )


def _total(signal: str, series_list: Sequence[Series], digits: int = 0) -> float | None:
    values = [to_brain_unit(signal, s.points[0][1]) for s in series_list if s.points]
    return round(sum(values), digits) if values else None
