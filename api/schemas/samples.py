"""Usage time series in and out."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import Annotated, Any, get_type_hints

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    field_validator,
)

from api.schemas.common import (
    NO_NUL,
    Cores,
    Fraction,
    Gpus,
    MiB,
    Name,
    NodeCount,
    NodeIndex,
    Number,
    RoleLabel,
    StepCount,
    Timestamp,
    bounded_amount,
    storable_name,
)
from brain.bounds import (
    CEILING_STEPS_PER_SEC,
    MAX_STEP_TIME_S,
    InputBounds,
)
from brain.domain import K8S_NAME_MAX, NodePoint
from brain.names import name_problem
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
    step_time_s: (
        Annotated[float, Field(gt=0, le=MAX_STEP_TIME_S, allow_inf_nan=False), Number] | None
    ) = Field(
        None,
        description="Mean time of one mini-batch on this node since its previous sample, "
        "seconds (slow-node detection).",
    )


StepsPerSec = bounded_amount(
    "steps_per_sec", CEILING_STEPS_PER_SEC, "Training speed, global steps per second."
)


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
# points, and validating 5,000 of them as NodePointIn (a Python function per bounded
# field: the bounds are settings) cost more CPU than storing them. The body is first
# validated by pydantic-core alone against a model with the site's bounds built in,
# the same checks or stricter; a body it does not accept is validated again as
# SampleBatch, which accepts it or names the first offending field as it always does.
# A "ts" string holding a bare number: SampleBatch refuses it (see Timestamp).
_NUMERIC_TIME = re.compile(rb'"ts"\s*:\s*"[-+\d.eE\s]*"')
# No timestamp within a day of the calendar's ends: it may not convert to UTC.
_SAFE_UTC = (datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, tzinfo=UTC))


@functools.cache  # one model per distinct bounds: those of the app's settings
def _fast_validated_batch_model(bounds: InputBounds) -> TypeAdapter[Any]:
    def bounded(limit: float) -> Any:
        return Annotated[float, Field(ge=0, le=limit, allow_inf_nan=False)]

    earliest = max(bounds.min_timestamp, _SAFE_UTC[0])
    point = create_model(
        "FastValidatedNodePoint",
        __base__=NodePointIn,
        # No name rule: fast_validated_batch checks each distinct name once, after.
        name=(Annotated[str, Field(min_length=1, max_length=K8S_NAME_MAX)], ...),
        role=(Annotated[str, Field(min_length=1, max_length=64)], ...),
        ts=(Annotated[AwareDatetime, Field(ge=earliest, le=_SAFE_UTC[1])], ...),
        cpu=(bounded(bounds.cpu), ...),
        memory_mib=(bounded(bounds.memory_mib), ...),
        gpu_memory_mib=(bounded(bounds.memory_mib) | None, None),
        gpu_memory_total_mib=(bounded(bounds.memory_mib) | None, None),
    )
    batch = create_model(
        "FastValidatedBatch",
        __config__=ConfigDict(extra="forbid"),
        nodes=(list[point], Field(default_factory=list)),
        speed=(list[SpeedPointIn], Field(default_factory=list)),
    )
    return TypeAdapter(batch)


def fast_validated_batch(body: bytes, bounds: InputBounds) -> SampleBatch | None:
    """The batch in ``body`` when it passes the fast checks, else None (validate it as
    SampleBatch). Strict JSON types: no number from a string, no integer from 1.0.
    Node points are NodePointIn whose timestamps keep their offset (not yet UTC)."""
    if b"\\u0000" in body:  # the only way JSON carries a NUL (raw control bytes are invalid)
        return None
    if _NUMERIC_TIME.search(body):  # pydantic-core reads "1700000000" as a Unix time
        return None
    try:
        batch = _fast_validated_batch_model(bounds).validate_json(body, strict=True)
    except ValidationError:
        return None
    # Names as every stored name (brain.names), each distinct one once: a batch names a
    # few nodes and roles many times over. Joined by a space, which a name may hold.
    if name_problem(" ".join({p.name for p in batch.nodes} | {p.role for p in batch.nodes})):
        return None
    return SampleBatch.model_construct(nodes=batch.nodes, speed=batch.speed)


class IngestOut(BaseModel):
    accepted: int = Field(description="Points stored by this request.")
    duplicates: int = Field(description="Points already stored (a retry or a repeated point).")


# A stored node point as the API returns it: NodePoint's fields, every one present.
NodePointOut = create_model(
    "NodePointOut",
    __config__=ConfigDict(from_attributes=True),
    **{name: (hint, ...) for name, hint in get_type_hints(NodePoint).items()},
)


class SpeedPointOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
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
    status: str = Field(
        "running",
        max_length=32,
        pattern=NO_NUL,
        description="`running` (or any other word) counts; `failed`, `removed`, `succeeded`, "
        "`stopped`, `evicted` and `migrated` (replaced by a newly named node) no longer do.",
    )
    created_at: Timestamp | None = None
    finished_at: Timestamp | None = None

    @field_validator("status")
    @classmethod
    def _status_is_a_name(cls, value: str) -> str:
        """A node's state is stored and shown as a name is (brain.names)."""
        return storable_name(value)


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
