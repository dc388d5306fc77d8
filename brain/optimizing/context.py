"""The read-only picture of a job that the service hands to an optimizer.

Everything here is plain immutable data: optimizers must not reach for the
database, the network or global settings, so whatever they need is put here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from brain.domain import (
    JobStatus,
    Limits,
    PlanStatus,
    Resources,
    RoleBounds,
    RoleSpec,
    Stage,
    Strategy,
    gpu_cards,
)
from brain.optimizing.cluster import ClusterView
from brain.optimizing.proposal import NodeChange, Reason
from brain.optimizing.sizing_model import SizingModel


@dataclass(frozen=True)
class JobView:
    uid: str
    name: str
    user: str
    dataset: str | None
    group_key: str
    strategy: Strategy
    status: JobStatus
    limits: Limits
    roles: dict[str, RoleSpec]
    gpu_type: str | None = None
    total_steps: int | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # Per role, the node counts no plan may leave (elastic jobs); roles without are unbounded.
    bounds: dict[str, RoleBounds] = field(default_factory=dict)
    namespace: str | None = None

    def bounds_of(self, role: str) -> RoleBounds:
        return self.bounds.get(role, RoleBounds())

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True)
class NodeView:
    """A node of the job with what it requested."""

    name: str
    role: str
    index: int
    cpu: float
    memory_mib: float
    gpu: float = 0.0
    status: str = "running"


@dataclass(frozen=True)
class NodeSample:
    """One usage point of one node."""

    node: str
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None = None
    gpu_memory_mib: float | None = None
    gpu_memory_total_mib: float | None = None
    step_time_s: float | None = None


@dataclass(frozen=True)
class MemoryPeak:
    """A node's highest memory use over a longer window than ``samples``: its samples
    from ``since`` (the first in the window, or the node's first) to the newest."""

    node: str
    peak_mib: float
    since: datetime


@dataclass(frozen=True)
class SpeedSample:
    ts: datetime
    global_step: int
    steps_per_sec: float
    workers: int


@dataclass(frozen=True)
class EventView:
    id: int
    ts: datetime
    kind: str
    node: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class PlanView:
    """A plan proposed earlier for this job and what became of it."""

    id: int
    stage: Stage
    status: PlanStatus
    created_at: datetime
    roles: dict[str, RoleSpec]
    launch: tuple[NodeChange, ...] = ()
    remove: tuple[NodeChange, ...] = ()
    migrate: tuple[NodeChange, ...] = ()
    optimizers: tuple[str, ...] = ()
    source_event_id: int | None = None
    status_message: str | None = None
    applied_at: datetime | None = None
    # Why the plan says what it says (an optimizer may look for its own earlier decisions).
    reasons: tuple[Reason, ...] = ()


@dataclass(frozen=True)
class NodeUsage:
    """Usage statistics of one node over a whole (historical) run."""

    name: str
    role: str
    requested: Resources
    cpu_mean: float
    cpu_max: float
    cpu_p95: float
    memory_mean_mib: float
    memory_max_mib: float
    gpu_util_mean: float | None = None
    gpu_memory_max_mib: float | None = None
    gpu_memory_total_mib: float | None = None

    @property
    def gpu_card_mib(self) -> float | None:
        """The memory of one of the node's cards (``gpu_memory_total_mib`` is all of them)."""
        if not self.gpu_memory_total_mib:
            return None
        return self.gpu_memory_total_mib / gpu_cards(self.requested.gpu)

    @property
    def gpu_memory_util_max(self) -> float | None:
        if not self.gpu_memory_max_mib or not self.gpu_memory_total_mib:
            return None
        return self.gpu_memory_max_mib / self.gpu_memory_total_mib


@dataclass(frozen=True)
class HistoricalJob:
    """A finished related job: its description and per-node usage over its run."""

    job: JobView
    nodes: tuple[NodeUsage, ...]
    # How long the run ran, from its summary: from ``started_at``, else from its first
    # sample (a job registered without ``started_at``, as the README's example is), to its
    # end. The first sample rather than ``created_at``: a job is often registered long
    # before its pods train. None where the summary knows neither.
    run_seconds: float | None = None

    @property
    def duration_s(self) -> float | None:
        """The run's length: the summary's, else the job's ``started_at``/``finished_at``."""
        return self.run_seconds if self.run_seconds is not None else self.job.duration_s

    @property
    def run_length_from(self) -> str | None:
        """Where ``duration_s`` comes from: ``started_at``, ``first_sample`` or None."""
        if self.job.started_at is not None:
            return "started_at"
        return "first_sample" if self.run_seconds is not None else None

    def role_nodes(self, role: str) -> list[NodeUsage]:
        return [n for n in self.nodes if n.role == role]


@dataclass(frozen=True)
class OptimizerContext:
    """Everything an optimizer may use to make its proposal.

    ``samples`` and ``speed`` are a recent window, oldest first. ``history`` holds
    related finished jobs, most recent first. ``node_max`` is the largest node the
    cluster can schedule. ``node`` names the node a stage is about (the OOM stage).
    ``sizing_model`` is the learned recommender when one is trained (``learned_peak``).
    ``cluster`` is the cluster's fresh state in the running stage (None: none recorded,
    or too old, or another stage). ``memory_peaks`` holds each node's memory peak over
    the service's longer peak window (the running stage only). ``failed_nodes`` are the
    job's nodes reported ``failed`` or ``evicted``, which ``nodes`` leaves out: the
    guard counts them where the role's count still has room for them (the master may
    bring one back at its own size). ``gone_nodes`` are its other nodes no longer running
    (removed, migrated, finished): the sample window may still hold their samples.
    """

    stage: Stage
    now: datetime
    job: JobView
    nodes: Sequence[NodeView] = ()
    samples: Sequence[NodeSample] = ()
    speed: Sequence[SpeedSample] = ()
    events: Sequence[EventView] = ()
    plans: Sequence[PlanView] = ()
    history: Sequence[HistoricalJob] = ()
    node_max: Resources = field(
        default_factory=lambda: Resources(cpu=64, memory_mib=512 * 1024, gpu=8)
    )
    node: str | None = None
    # The learned recommender, loaded by the service (None: not trained yet).
    sizing_model: SizingModel | None = None
    cluster: ClusterView | None = None
    memory_peaks: Sequence[MemoryPeak] = ()
    failed_nodes: Sequence[NodeView] = ()
    gone_nodes: Sequence[NodeView] = ()

    def memory_peak_of(self, node: str) -> MemoryPeak | None:
        return self._memory_peaks_by_node.get(node)

    @cached_property
    def _memory_peaks_by_node(self) -> dict[str, MemoryPeak]:
        """Each node's first peak, built once (a lookup per node, not a scan)."""
        return {p.node: p for p in reversed(self.memory_peaks)}

    def nodes_of(self, role: str) -> list[NodeView]:
        return [n for n in self.nodes if n.role == role]

    def samples_of(self, node: str) -> list[NodeSample]:
        return [s for s in self.samples if s.node == node]
