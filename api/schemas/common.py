"""Field types shared by the request schemas.

Every bound the store or plausibility imposes is stated here, so the OpenAPI schema
shows it: column limits, finite numbers only, plausible physical quantities (here the
ceilings in brain.bounds, the most a site may configure; each app's OpenAPI document
states its ``BRAIN_PLAUSIBLE_*`` settings instead, see api.openapi_bounds), NUL-free
strings (PostgreSQL text cannot hold NUL), names as brain.names allows, and timestamps
between ``BRAIN_MIN_TIMESTAMP`` and now.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from api.openapi_bounds import setting_mark
from api.schemas.bounds import at_most, not_before_floor, plausible_mark
from brain.bounds import (
    CEILING_CPU,
    CEILING_GPU,
    CEILING_MEMORY_MIB,
    CEILING_NODES,
    INT32_MAX,
    INT64_MAX,
)
from brain.domain import K8S_LABEL, K8S_NAME_MAX, NAMESPACE_MAX, USER_NAME_MAX
from brain.names import NAME_PATTERN, NAME_RULE, name_problem

NO_NUL = r"^[^\x00]*$"


def _json_number(value: object) -> object:
    """Only a JSON number is a quantity: ``true`` and ``"5"`` would otherwise pass as 1
    and 5, hiding a client's bug behind a plausible value."""
    if isinstance(value, bool | str | bytes):
        raise ValueError(f"expected a JSON number, got {type(value).__name__} {value!r:.40}")
    return value


def _rfc3339(value: object) -> object:
    """Only an RFC 3339 string is a time: a bare number would be read as Unix seconds
    (or milliseconds), a guess that silently puts samples in another decade."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or re.fullmatch(r"\s*[-+]?[\d.eE+-]+\s*", value):
        raise ValueError(
            f"expected an RFC 3339 timestamp such as 2026-01-02T03:04:05Z, got {value!r:.40}"
        )
    return value


Number = BeforeValidator(_json_number)


def bounded_amount(quantity: str, ceiling: float, description: str, per_job: bool = False) -> Any:
    """A finite, non-negative amount of ``quantity`` (an InputBounds field) within the
    hard ceiling and, as configured, the plausible bound: per node, or for a whole job's
    limits up to BRAIN_PLAUSIBLE_NODES nodes of the plausible size."""
    return Annotated[
        float,
        Field(
            ge=0,
            le=ceiling,
            allow_inf_nan=False,
            description=description,
            json_schema_extra=plausible_mark(quantity, per_job=per_job),
        ),
        Number,
        at_most(quantity, per_job=per_job),
    ]


Cores = bounded_amount("cpu", CEILING_CPU, "CPU cores.")
MiB = bounded_amount("memory_mib", CEILING_MEMORY_MIB, "Memory in MiB.")
Gpus = bounded_amount("gpu", CEILING_GPU, "GPUs, fractional allowed.")
JobCores = bounded_amount("cpu", CEILING_CPU * CEILING_NODES, "CPU cores.", per_job=True)
JobMiB = bounded_amount("memory_mib", CEILING_MEMORY_MIB * CEILING_NODES, "MiB.", per_job=True)
JobGpus = bounded_amount("gpu", CEILING_GPU * CEILING_NODES, "GPUs.", per_job=True)
Fraction = Annotated[
    float,
    Field(ge=0, le=1, allow_inf_nan=False, description="Utilization as a fraction 0..1."),
    Number,
]
NodeCount = Annotated[
    int,
    Field(
        ge=0,
        le=CEILING_NODES,
        description="Nodes.",
        json_schema_extra=plausible_mark("nodes"),
    ),
    Number,
    at_most("nodes"),
]
NodeIndex = Annotated[int, Field(ge=0, le=INT32_MAX), Number]
StepCount = Annotated[int, Field(ge=0, le=INT64_MAX), Number]


def storable_name(value: str) -> str:
    """``value``, or a validation error saying what of it no stored name may hold."""
    problem = name_problem(value)
    if problem is not None:
        raise PydanticCustomError("name_characters", "{problem}", {"problem": problem})
    return value


def name_of(max_length: int, description: str | None = None, min_length: int = 1) -> Any:
    """A name of at most ``max_length`` characters, checked by brain.names (the one rule
    for every stored name); the OpenAPI states the rule as a ``pattern``."""
    return Annotated[
        str,
        Field(
            min_length=min_length,
            max_length=max_length,
            description=" ".join(filter(None, [description, NAME_RULE])),
            json_schema_extra={"pattern": NAME_PATTERN},
        ),
        AfterValidator(storable_name),
    ]


# Names end up in logs, consoles and Kubernetes objects (brain.names says what they
# may not hold).
Name = name_of(K8S_NAME_MAX)
UserName = name_of(USER_NAME_MAX)
RoleLabel = name_of(64, "ps, chief, worker, ...")
Namespace = Annotated[
    str,
    Field(
        min_length=1,
        max_length=NAMESPACE_MAX,
        pattern=K8S_LABEL,
        description="Kubernetes namespace: lowercase letters, digits and '-', at most "
        f"{NAMESPACE_MAX}.",
    ),
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
    BeforeValidator(_rfc3339),
    AfterValidator(_to_utc),
    AfterValidator(not_before_floor),
    Field(
        description="RFC 3339 timestamp with offset, e.g. 2026-01-02T03:04:05Z; not in the "
        "future (beyond BRAIN_CLOCK_SKEW_S).",
        json_schema_extra=setting_mark("BRAIN_MIN_TIMESTAMP"),
    ),
]
# A time used to select (query parameters): any instant representable in UTC.
Instant = Annotated[
    AwareDatetime,
    BeforeValidator(_rfc3339),
    AfterValidator(_to_utc),
    Field(description="RFC 3339 timestamp with offset, e.g. 2026-01-02T03:04:05Z."),
]
