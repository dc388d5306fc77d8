"""The cluster's state."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class ClusterStateOut(BaseModel):
    """Free capacity and pending demand of the cluster; ``null``: not reported by the
    source (no GPU nodes, no kube-state-metrics)."""

    source: str = Field(description="Who reported it: `prometheus` (the collector).")
    ts: datetime = Field(description="When the state was read.")
    nodes: int = Field(description="Nodes whose free capacity is summed (node-exporter).")
    free_cpu: float | None = Field(description="Idle CPU cores over all nodes.")
    free_memory_mib: float | None = Field(description="Available memory over all nodes, MiB.")
    free_gpu: float | None = Field(
        description="GPUs not requested by a pending or running pod, over all nodes."
    )
    pending_pods: int | None = Field(description="Pods waiting in phase Pending.")
    pending_cpu: float | None = Field(description="CPU cores the pending pods request.")
    pending_memory_mib: float | None = Field(description="MiB the pending pods request.")
    pending_gpu: float | None = Field(description="GPUs the pending pods request.")
