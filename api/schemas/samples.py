"""Usage time series in and out."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.bounds import at_most
from api.schemas.common import (
    NO_NUL,
    Cores,
    Fraction,
    Gpus,
    MiB,
    Name,
    NodeCount,
    NodeIndex,
    RoleLabel,
    StepCount,
    Timestamp,
)
from brain.bounds import CEILING_STEPS_PER_SEC, MAX_STEP_TIME_S
from brain.services.samples import NodePoint, SpeedPoint


class NodePointIn(BaseModel):
    """One usage point of one node. An unknown node is created from its first point."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    role: RoleLabel
    index: NodeIndex = 0
    ts: Timestamp
    cpu: Cores = Field(description="CPU cores used.")
    memory_mib: MiB = Field(description="Memory used, MiB.")
    gpu_util: Fraction | None = Field(None, description="Mean utilization over the node's GPUs.")
    gpu_memory_mib: MiB | None = Field(None, description="GPU memory used, MiB.")
    gpu_memory_total_mib: MiB | None = Field(None, description="GPU memory size, MiB.")
    step_time_s: float | None = Field(
        None,
        gt=0,
        le=MAX_STEP_TIME_S,
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


StepsPerSec = Annotated[
    float,
    Field(
        ge=0,
        le=CEILING_STEPS_PER_SEC,
        allow_inf_nan=False,
        description="Training speed, global steps per second (at most "
        "BRAIN_PLAUSIBLE_STEPS_PER_SEC).",
    ),
    at_most("steps_per_sec"),
]


class SpeedPointIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ts: Timestamp
    global_step: StepCount
    steps_per_sec: StepsPerSec
    workers: NodeCount = Field(description="Workers training at that moment.")

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
    role: RoleLabel
    index: NodeIndex = 0
    cpu: Cores = 0
    memory_mib: MiB = 0
    gpu: Gpus = 0
    status: str = Field("running", max_length=32, pattern=NO_NUL)
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
