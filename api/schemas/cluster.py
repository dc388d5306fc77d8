"""The cluster's state, in (pushed by a platform without Prometheus) and out."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from api.schemas.common import Number, Timestamp, bounded_amount
from brain.bounds import CEILING_CPU, CEILING_GPU, CEILING_MEMORY_MIB, CEILING_NODES, INT32_MAX
from brain.domain import ClusterState

# The collector's own source: a push may not overwrite what Prometheus showed.
COLLECTOR_SOURCE = "prometheus"

# A whole cluster's amount: at most the plausible node size times the plausible node
# count (the bounds of a job's limits), so every stored sum stays finite.
ClusterCores = bounded_amount(
    "cpu", CEILING_CPU * CEILING_NODES, "CPU cores over the cluster.", per_job=True
)
ClusterMiB = bounded_amount(
    "memory_mib", CEILING_MEMORY_MIB * CEILING_NODES, "MiB over the cluster.", per_job=True
)
ClusterGpus = bounded_amount(
    "gpu", CEILING_GPU * CEILING_NODES, "GPUs over the cluster.", per_job=True
)
Count = Annotated[int, Field(ge=0, le=INT32_MAX), Number]


class ClusterStateIn(BaseModel):
    """Free capacity and pending demand as a platform without Prometheus sees them (e.g.
    a Volcano or Slurm scheduler's view). Omitted values are stored as unknown (`null`),
    never as 0; at least one free or pending amount must be given."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(
        "push",
        min_length=1,
        max_length=32,
        pattern=r"^[a-z0-9][a-z0-9_.-]*$",
        description="Who reports it (one stored state per source, replaced by each push); "
        f"`{COLLECTOR_SOURCE}` is the collector's own.",
    )
    ts: Timestamp | None = Field(None, description="When the state was seen; default now.")
    nodes: Count = Field(description="Nodes whose free capacity is summed.")
    free_cpu: ClusterCores | None = None
    free_memory_mib: ClusterMiB | None = None
    free_gpu: ClusterGpus | None = None
    pending_pods: Count | None = Field(None, description="Pods waiting to be scheduled.")
    pending_cpu: ClusterCores | None = None
    pending_memory_mib: ClusterMiB | None = None
    pending_gpu: ClusterGpus | None = None
    queued_jobs: Count | None = Field(None, description="Jobs the scheduler's queues hold back.")

    @field_validator("source")
    @classmethod
    def _not_the_collector(cls, value: str) -> str:
        if value == COLLECTOR_SOURCE:
            raise ValueError(f"{COLLECTOR_SOURCE!r} is the collector's source; name the pusher")
        return value

    @model_validator(mode="after")
    def _says_something(self) -> ClusterStateIn:
        amounts = (
            self.free_cpu,
            self.free_memory_mib,
            self.free_gpu,
            self.pending_cpu,
            self.pending_memory_mib,
            self.pending_gpu,
        )
        if all(value is None for value in amounts):
            raise ValueError("give at least one free_* or pending_* amount")
        return self

    def to_state(self, ts: datetime) -> ClusterState:
        return ClusterState(
            source=self.source,
            ts=ts,
            nodes=self.nodes,
            free_cpu=self.free_cpu,
            free_memory_mib=self.free_memory_mib,
            free_gpu=self.free_gpu,
            pending_pods=self.pending_pods,
            pending_cpu=self.pending_cpu,
            pending_memory_mib=self.pending_memory_mib,
            pending_gpu=self.pending_gpu,
            queued_jobs=self.queued_jobs,
        )


class ClusterStateOut(BaseModel):
    """Free capacity and pending demand of the cluster; ``null``: not reported by the
    source (no GPU nodes, no kube-state-metrics, not pushed)."""

    source: str = Field(description="Who reported it: `prometheus` (the collector) or a pusher.")
    ts: datetime = Field(description="When the state was read.")
    nodes: int = Field(description="Nodes whose free capacity is summed.")
    free_cpu: float | None = Field(description="Idle CPU cores over all nodes.")
    free_memory_mib: float | None = Field(description="Available memory over all nodes, MiB.")
    free_gpu: float | None = Field(
        description="GPUs not requested by a pending or running pod, over all nodes."
    )
    pending_pods: int | None = Field(description="Pods waiting in phase Pending.")
    pending_cpu: float | None = Field(description="CPU cores the pending pods request.")
    pending_memory_mib: float | None = Field(description="MiB the pending pods request.")
    pending_gpu: float | None = Field(description="GPUs the pending pods request.")
    queued_jobs: int | None = Field(description="Jobs held back in the scheduler's queues.")
