"""Job and node events."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Name, Text, Timestamp
from brain.domain import EventKind


class EventIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ts: Timestamp
    kind: EventKind
    node: Name | None = Field(None, description="Node name; omit for a job-level event.")
    detail: Text | None = Field(None, max_length=4000)


class EventOut(BaseModel):
    id: int
    ts: datetime
    kind: EventKind
    node: str | None
    detail: str | None


class EventsIngestOut(BaseModel):
    accepted: int
    duplicates: int
