"""Priority from utilization: a score per user or group and a suggested priority class."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from api.schemas.portraits import Page, PriorityOut, TotalsOut


class PriorityBy(StrEnum):
    user = "user"
    group = "group"


class PriorityRow(BaseModel):
    namespace: str | None = Field(
        description="The namespace of the owner's jobs (null: jobs registered without one)."
    )
    key: str = Field(description="The user name or group key.")
    priority: PriorityOut
    totals: TotalsOut


class PrioritiesOut(Page):
    by: PriorityBy
    days: int
    since: datetime = Field(description="Jobs ended at or after this time are counted.")
    items: list[PriorityRow] = Field(description="Lowest score first; owners not judged last.")
