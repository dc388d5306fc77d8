"""Field types shared by the request schemas."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, Field

Cores = Annotated[float, Field(ge=0, description="CPU cores.")]
MiB = Annotated[float, Field(ge=0, description="Memory in MiB.")]
Gpus = Annotated[float, Field(ge=0, description="GPUs (fractional allowed).")]
Fraction = Annotated[float, Field(ge=0, le=1, description="Utilization as a fraction 0..1.")]
Name = Annotated[str, Field(min_length=1, max_length=253)]


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


# RFC 3339 with an offset; stored and returned as UTC.
Timestamp = Annotated[
    AwareDatetime,
    AfterValidator(_to_utc),
    Field(description="RFC 3339 timestamp with offset, e.g. 2026-01-02T03:04:05Z."),
]
