"""What the client sends and reads, typed. Field names and units follow the REST API:
``cpu`` in cores, ``memory_mib`` in MiB, ``gpu`` a count, timestamps aware datetimes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from brain.domain import PlanStatus, Stage, Strategy


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


class RoleRequest(BaseModel):
    """What one role asks for: ``count`` nodes of this size each; an elastic role also
    the fewest and most nodes plans may give it."""

    count: int
    cpu: float = 0
    memory_mib: float = 0
    gpu: float = 0
    min_count: int | None = None
    max_count: int | None = None


class ClusterStatePush(BaseModel):
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


class JobLimits(BaseModel):
    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None


class JobRegistration(BaseModel):
    """The body of ``PUT /api/v1/jobs/{uid}``."""

    name: str
    user: str
    strategy: Strategy = Strategy.ps
    dataset: str | None = None
    limits: JobLimits = Field(default_factory=JobLimits)
    roles: dict[str, RoleRequest] = Field(default_factory=dict)
    total_steps: int | None = None
    status: str = "running"
    started_at: datetime | None = None


class NodeUsage(BaseModel):
    """One usage point of one node."""

    name: str
    role: str
    index: int = 0
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None = None
    step_time_s: float | None = None


class SpeedPoint(BaseModel):
    ts: datetime
    global_step: int
    steps_per_sec: float
    workers: int


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
