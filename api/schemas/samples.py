"""Usage time series in and out."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Cores, Fraction, MiB, Name, Timestamp
from brain.services.samples import NodePoint, SpeedPoint


class NodePointIn(BaseModel):
    """One usage point of one node. An unknown node is created from its first point."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    role: str = Field(min_length=1, max_length=64, description="ps, chief, worker, ...")
    index: int = Field(0, ge=0)
    ts: Timestamp
    cpu: Cores = Field(description="CPU cores used.")
    memory_mib: MiB = Field(description="Memory used, MiB.")
    gpu_util: Fraction | None = Field(None, description="Mean utilization over the node's GPUs.")
    gpu_memory_mib: MiB | None = Field(None, description="GPU memory used, MiB.")
    gpu_memory_total_mib: MiB | None = Field(None, description="GPU memory size, MiB.")
    step_time_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="Mean time of one mini-batch on this node since its previous sample, "
        "seconds (slow-node detection).",
    )

    def to_point(self) -> NodePoint:
        return NodePoint(
            self.name,
            self.role,
            self.index,
            self.ts,
            self.cpu,
            self.memory_mib,
            self.gpu_util,
            self.gpu_memory_mib,
            self.gpu_memory_total_mib,
            self.step_time_s,
        )


class SpeedPointIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ts: Timestamp
    global_step: int = Field(ge=0)
    steps_per_sec: float = Field(ge=0, description="Training speed, global steps per second.")
    workers: int = Field(ge=0, description="Workers training at that moment.")

    def to_point(self) -> SpeedPoint:
        return SpeedPoint(self.ts, self.global_step, self.steps_per_sec, self.workers)


class SampleBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: list[NodePointIn] = Field(default_factory=list)
    speed: list[SpeedPointIn] = Field(default_factory=list)


class IngestOut(BaseModel):
    accepted: int = Field(description="Points stored by this request.")
    duplicates: int = Field(description="Points already stored (a retry or a repeated point).")


class NodePointOut(BaseModel):
    name: str
    role: str
    index: int
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None
    gpu_memory_mib: float | None
    gpu_memory_total_mib: float | None
    step_time_s: float | None


class SpeedPointOut(BaseModel):
    ts: datetime
    global_step: int
    steps_per_sec: float
    workers: int


class SeriesOut(BaseModel):
    nodes: list[NodePointOut]
    speed: list[SpeedPointOut]
    truncated: bool = Field(
        description="True when `limit` cut the node series; narrow `start`/`end` to see more."
    )


class NodeIn(BaseModel):
    """A node registered explicitly, with what it requests."""

    model_config = ConfigDict(extra="forbid")
    role: str = Field(min_length=1, max_length=64)
    index: int = Field(0, ge=0)
    cpu: Cores = 0
    memory_mib: MiB = 0
    gpu: float = Field(0, ge=0)
    status: str = Field("running", max_length=32)
    created_at: Timestamp | None = None
    finished_at: Timestamp | None = None


class NodeOut(BaseModel):
    name: str
    role: str
    index: int
    cpu: float
    memory_mib: float
    gpu: float
    status: str
    created_at: datetime
    finished_at: datetime | None
