"""What the client sends and reads, typed. Field names and units follow the REST API:
``cpu`` in cores, ``memory_mib`` in MiB, ``gpu`` a count, utilizations fractions 0..1,
timestamps aware datetimes.

Every model the client sends forbids fields the API does not take, so a misspelt or
unsupported field fails at once in the job master instead of being dropped on the way.
This package imports only pydantic and httpx: it is also the ``brain-client``
distribution (``client/``), which a job master installs without the server.

So the API's schemas and enums are written again here, by hand, rather than imported or
generated. Generating them would add a code generator and a build step to keep in step,
and would lose what is meant to differ: the client's defaults (a registration is
``running``), its docstrings for job masters, and ``extra="forbid"`` on what it sends.
The copies cannot drift unnoticed: ``tests/client/test_openapi_match.py`` compares every
model with the server's OpenAPI document (property names, JSON types, enum values,
required properties) for each operation it is sent to or read from.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The server's own enums live in brain.domain; these copies keep the client free of the
# server's packages.


class JobStatus(StrEnum):
    pending = "pending"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    stopped = "stopped"


class Strategy(StrEnum):
    ps = "ps"
    allreduce = "allreduce"


class EventKind(StrEnum):
    started = "started"
    succeeded = "succeeded"
    failed = "failed"
    oom = "oom"
    evicted = "evicted"
    relaunched = "relaunched"
    scaled = "scaled"


class Stage(StrEnum):
    create = "create"
    oom = "oom"
    estimate = "estimate"
    running = "running"


class PlanStatus(StrEnum):
    proposed = "proposed"
    applied = "applied"
    rejected = "rejected"
    failed = "failed"
    superseded = "superseded"
    # A plan that changes nothing: kept for its reasons, with nothing to apply or report.
    no_change = "no_change"


class _In(BaseModel):
    # A field the API does not take is an error here, never silently left out.
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    # Newer servers may add fields; an older client must still read their answers.
    model_config = ConfigDict(extra="ignore")


class ErrorBody(_Out):
    code: str
    message: str
    field: str | None = None


class ErrorEnvelope(_Out):
    """Every error Brain returns: ``{"error": {"code", "message", "field"}}``."""

    error: ErrorBody


class RoleRequest(_In):
    """What one role asks for: ``count`` nodes of this size each; an elastic role also
    the fewest and most nodes plans may give it."""

    count: int
    cpu: float = 0
    memory_mib: float = 0
    gpu: float = 0
    min_count: int | None = None
    max_count: int | None = None


class JobLimits(_In):
    """Upper bounds for the whole job (sums over its nodes)."""

    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None


class JobRegistration(_In):
    """The body of ``PUT /api/v1/jobs/{uid}``.

    ``group_key`` names recurring runs (default ``<user>/<name>``); ``namespace`` is the
    Kubernetes namespace (tokens may be limited to namespaces); ``gpu_type`` and
    ``framework`` narrow the history suggestions draw on. A past run is recorded with
    ``status``, ``started_at`` and ``finished_at``. Unlike the API (``pending``), the
    status defaults to ``running``: a job master registers the job it runs.
    """

    name: str
    user: str
    dataset: str | None = None
    group_key: str | None = None
    framework: str | None = None
    strategy: Strategy = Strategy.ps
    namespace: str | None = None
    cluster: str | None = None
    gpu_type: str | None = None
    limits: JobLimits = Field(default_factory=JobLimits)
    roles: dict[str, RoleRequest] = Field(default_factory=dict)
    total_steps: int | None = None
    status: JobStatus = JobStatus.running
    exit_reason: str | None = None
    created_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class JobUpdate(_In):
    """The body of ``PATCH /api/v1/jobs/{uid}``: only the fields given are sent (and
    changed); ``exit_reason=None`` given explicitly clears it."""

    status: JobStatus | None = None
    exit_reason: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


class NodeRegistration(_In):
    """The body of ``PUT /api/v1/jobs/{uid}/nodes/{name}``: what a node requests."""

    role: str
    index: int = 0
    cpu: float = 0
    memory_mib: float = 0
    gpu: float = 0
    status: str = "running"
    created_at: datetime | None = None
    finished_at: datetime | None = None


class NodeUsage(_In):
    """One usage point of one node: CPU cores and MiB used, the mean utilization of its
    GPUs (0..1), GPU memory used and its size (MiB), and the mean mini-batch time since
    the node's previous point (seconds; for slow-node detection)."""

    name: str
    role: str
    index: int = 0
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None = None
    gpu_memory_mib: float | None = None
    gpu_memory_total_mib: float | None = None
    step_time_s: float | None = None


class SpeedPoint(_In):
    ts: datetime
    global_step: int
    steps_per_sec: float
    workers: int


class Event(_In):
    """One event of ``POST /api/v1/jobs/{uid}/events``; ``node`` None for the job."""

    ts: datetime
    kind: EventKind
    node: str | None = None
    detail: str | None = None


class ClusterStatePush(_In):
    """The body of ``POST /api/v1/cluster/state``: free capacity and pending demand as a
    platform without Prometheus sees them; ``None`` is unknown, never 0."""

    source: str = "push"
    ts: datetime | None = None
    nodes: int
    free_cpu: float | None = None
    free_memory_mib: float | None = None
    free_gpu: float | None = None
    pending_pods: int | None = None
    pending_cpu: float | None = None
    pending_memory_mib: float | None = None
    pending_gpu: float | None = None
    queued_jobs: int | None = None


class Ingested(_Out):
    accepted: int
    duplicates: int


class PlanRole(_Out):
    count: int | None = None
    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None
    cpu_limit: float | None = None


class PlanNode(_Out):
    name: str | None = None
    role: str
    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None


class PlanReason(_Out):
    optimizer: str
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    threshold: dict[str, Any] = Field(default_factory=dict)


class Plan(_Out):
    """A ScalePlan as Brain returns it."""

    id: int
    job_uid: str
    stage: Stage
    status: PlanStatus
    status_message: str | None = None
    created_at: datetime
    roles: dict[str, PlanRole] = Field(default_factory=dict)
    launch: list[PlanNode] = Field(default_factory=list)
    remove: list[PlanNode] = Field(default_factory=list)
    migrate: list[PlanNode] = Field(default_factory=list)
    ps_hosts: list[str] = Field(default_factory=list)
    reasons: list[PlanReason] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when the plan changes nothing (it only explains why)."""
        return not (self.roles or self.launch or self.remove or self.migrate)
