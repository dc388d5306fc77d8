"""Usage time series in and out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

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
from brain.bounds import (
    CEILING_CPU,
    CEILING_MEMORY_MIB,
    CEILING_STEPS_PER_SEC,
    MAX_STEP_TIME_S,
    InputBounds,
)
from brain.services.samples import SpeedPoint


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


# The fast way in for a batch (api/routers/samples.py): the bulk of a batch is node
# points, and validating 5,000 of them as NodePointIn, whose bounds are settings checked
# by a Python function per field, cost more CPU than storing them. A batch is first
# validated against the checks below, which are the same or stricter, with the bounds
# in force checked once per batch. A batch they do not accept is validated again as
# SampleBatch, which accepts it or names the first offending field exactly as before.
_SAFE_UTC = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))


class _CheckedNodePoint(NodePointIn):
    """NodePointIn with only the fixed bounds: the site's bounds are checked per batch."""

    ts: AwareDatetime
    cpu: Annotated[float, Field(ge=0, le=CEILING_CPU, allow_inf_nan=False)]
    memory_mib: Annotated[float, Field(ge=0, le=CEILING_MEMORY_MIB, allow_inf_nan=False)]
    gpu_memory_mib: Annotated[
        float | None, Field(ge=0, le=CEILING_MEMORY_MIB, allow_inf_nan=False)
    ] = None
    gpu_memory_total_mib: Annotated[
        float | None, Field(ge=0, le=CEILING_MEMORY_MIB, allow_inf_nan=False)
    ] = None


class _CheckedBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: list[_CheckedNodePoint] = Field(default_factory=list)
    speed: list[SpeedPointIn] = Field(default_factory=list)


_CHECKED_BATCH = TypeAdapter(_CheckedBatch)


def checked_batch(body: bytes, bounds: InputBounds, latest_allowed: datetime) -> SampleBatch | None:
    """The batch in ``body`` when it passes the fast checks, else None (validate it as
    SampleBatch). Strict JSON types: no number from a string, no integer from 1.0."""
    try:
        batch = _CHECKED_BATCH.validate_json(body, strict=True)
    except ValidationError:
        return None
    nodes = batch.nodes
    if nodes:
        memory = [p.memory_mib for p in nodes]
        memory += [p.gpu_memory_mib for p in nodes if p.gpu_memory_mib is not None]
        memory += [p.gpu_memory_total_mib for p in nodes if p.gpu_memory_total_mib is not None]
        earliest = min(p.ts for p in nodes)
        latest = max(p.ts for p in nodes)
        if (
            max(p.cpu for p in nodes) > bounds.cpu
            or max(memory) > bounds.memory_mib
            or earliest < max(bounds.min_timestamp, _SAFE_UTC[0])
            or latest > min(latest_allowed, _SAFE_UTC[1])
        ):
            return None
    return SampleBatch.model_construct(nodes=nodes, speed=batch.speed)


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
