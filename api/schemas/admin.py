"""API tokens and retention, for administrators."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Instant, Name, name_of
from brain.services.tokens import TokenScope

TokenName = name_of(128)


class TokenIn(BaseModel):
    """A token to create; its secret is returned once, in the answer."""

    name: TokenName = Field(description="Unique name, e.g. the job master's.")
    scope: TokenScope = Field(
        description="read (GETs), write (also registrations, samples, events, optimize, "
        "plan status), admin (everything, including tokens and retention)."
    )
    namespaces: list[Name] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Only jobs in these namespaces (others answer 404); omit for every one.",
    )
    expires_at: Instant | None = Field(None, description="When it stops working; omit: never.")


class TokenOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    name: str
    scope: TokenScope
    namespaces: list[str] | None
    prefix: str = Field(description="The secret's first characters, to tell tokens apart.")
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class NewTokenOut(TokenOut):
    secret: str = Field(description="Send as `Authorization: Bearer <secret>`; shown only now.")


class RetentionIn(BaseModel):
    older_than_days: int | None = Field(
        None,
        ge=1,
        le=36500,
        description="Delete raw samples older than this of summarized jobs; omit to use "
        "BRAIN_RETENTION_DAYS.",
    )


class RetentionOut(BaseModel):
    older_than_days: int
    deleted_samples: int = Field(description="Raw node and speed samples deleted.")
