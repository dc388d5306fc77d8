"""Field types shared by the request schemas.

Every bound the store or plausibility imposes is stated here, so the OpenAPI schema
shows it: column limits, finite numbers only, plausible physical quantities (the
defaults of the ``BRAIN_PLAUSIBLE_*`` settings; the ceilings in brain.bounds are the
most a site may configure), NUL-free strings (PostgreSQL text cannot hold NUL), and
timestamps between ``BRAIN_MIN_TIMESTAMP`` and now.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, Field

from api.schemas.bounds import at_most, not_before_floor
from brain.bounds import (
    CEILING_CPU,
    CEILING_GPU,
    CEILING_MEMORY_MIB,
    CEILING_NODES,
    INT32_MAX,
    INT64_MAX,
    InputBounds,
)
from brain.domain import K8S_NAME_MAX

NO_NUL = r"^[^\x00]*$"
_DEFAULT = InputBounds()

Cores = Annotated[
    float,
    Field(
        ge=0,
        le=CEILING_CPU,
        allow_inf_nan=False,
        description=f"CPU cores (at most BRAIN_PLAUSIBLE_CPU, default {_DEFAULT.cpu:g}).",
    ),
    at_most("cpu"),
]
MiB = Annotated[
    float,
    Field(
        ge=0,
        le=CEILING_MEMORY_MIB,
        allow_inf_nan=False,
        description="Memory in MiB (at most BRAIN_PLAUSIBLE_MEMORY_MIB, default "
        f"{_DEFAULT.memory_mib:g}).",
    ),
    at_most("memory_mib"),
]
Gpus = Annotated[
    float,
    Field(
        ge=0,
        le=CEILING_GPU,
        allow_inf_nan=False,
        description="GPUs, fractional allowed (at most BRAIN_PLAUSIBLE_GPU, default "
        f"{_DEFAULT.gpu:g}).",
    ),
    at_most("gpu"),
]
# A whole job's limits: up to BRAIN_PLAUSIBLE_NODES nodes of the plausible size.
JobCores = Annotated[
    float,
    Field(ge=0, le=CEILING_CPU * CEILING_NODES, allow_inf_nan=False, description="CPU cores."),
    at_most("cpu", per_job=True),
]
JobMiB = Annotated[
    float,
    Field(ge=0, le=CEILING_MEMORY_MIB * CEILING_NODES, allow_inf_nan=False, description="MiB."),
    at_most("memory_mib", per_job=True),
]
JobGpus = Annotated[
    float,
    Field(ge=0, le=CEILING_GPU * CEILING_NODES, allow_inf_nan=False, description="GPUs."),
    at_most("gpu", per_job=True),
]
Fraction = Annotated[
    float,
    Field(ge=0, le=1, allow_inf_nan=False, description="Utilization as a fraction 0..1."),
]
NodeCount = Annotated[
    int,
    Field(
        ge=0,
        le=CEILING_NODES,
        description=f"Nodes (at most BRAIN_PLAUSIBLE_NODES, default {_DEFAULT.nodes}).",
    ),
    at_most("nodes"),
]
NodeIndex = Annotated[int, Field(ge=0, le=INT32_MAX)]
StepCount = Annotated[int, Field(ge=0, le=INT64_MAX)]

Name = Annotated[str, Field(min_length=1, max_length=K8S_NAME_MAX, pattern=NO_NUL)]
UserName = Annotated[str, Field(min_length=1, max_length=128, pattern=NO_NUL)]
RoleLabel = Annotated[
    str, Field(min_length=1, max_length=64, pattern=NO_NUL, description="ps, chief, worker, ...")
]
# Free text: its length is bounded where it is used.
Text = Annotated[str, Field(pattern=NO_NUL)]


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+05:00
        raise ValueError("the time is outside the range representable in UTC") from exc


# RFC 3339 with an offset, at or after BRAIN_MIN_TIMESTAMP; stored and returned as UTC.
Timestamp = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    AfterValidator(not_before_floor),
    Field(
        description="RFC 3339 timestamp with offset, e.g. 2026-01-02T03:04:05Z; not before "
        f"BRAIN_MIN_TIMESTAMP (default {_DEFAULT.min_timestamp.date()}) nor in the future."
    ),
]
# A time used to select (query parameters): any instant representable in UTC.
Instant = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    Field(description="RFC 3339 timestamp with offset, e.g. 2026-01-02T03:04:05Z."),
]
