"""ScalePlans and optimizer runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.attributes import validated_from
from api.schemas.common import Name, Text, Timestamp, name_of
from brain.db.models import ScalePlanRow
from brain.domain import PlanStatus, Stage
from brain.optimizing.proposal import PlanBody

# Names of optimizers and of their settings (entry-point and field names).
OptimizerName = name_of(128)


class OptimizeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stage: Stage = Field(description="create, oom, estimate or running.")
    optimizers: list[OptimizerName] | None = Field(
        None,
        max_length=100,
        description="Optimizers to run instead of the stage's configured ones.",
    )
    settings: dict[OptimizerName, dict[OptimizerName, Any]] = Field(
        default_factory=dict,
        description='Per-optimizer settings overrides, e.g. {"hot_ps": {"hot_threshold": 0.85}}.',
    )
    node: Name | None = Field(
        None,
        description="The node the stage is about (oom: the OOM-killed node; its OOM event "
        "must be recorded first, else 409).",
    )


class PlanOut(PlanBody):
    """A stored plan: its body (the ``PlanBody`` every reader shares) and where it stands."""

    id: int
    job_uid: str
    stage: Stage
    status: PlanStatus
    status_message: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, plan: ScalePlanRow, job_uid: str) -> PlanOut:
        """The stored plan; fields not given here are the row's of the same name."""
        return validated_from(cls, plan, job_uid=job_uid, **plan.body.model_dump())


class PlanStatusIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: PlanStatus = Field(description="applied, rejected or failed.")
    message: Text | None = Field(None, max_length=4000)
    applied_at: Timestamp | None = Field(
        None,
        description="When the job master applied the plan (default: now); the optimizers' "
        "cooldowns count from it.",
    )


class ChangesOut(BaseModel):
    groups: list[str] = Field(
        description="Roles whose count or per-node size its plans may set; * is every role."
    )
    nodes: list[str] = Field(
        description="Roles whose single nodes its plans may migrate (relaunch with another "
        "size or on another host); * is every role."
    )


class OptimizerOut(BaseModel):
    name: str
    stages: list[str]
    description: str
    settings_schema: dict[str, Any] = Field(description="JSON Schema of the settings.")
    defaults: dict[str, Any]
    default_order: dict[str, int] = Field(
        description="Stage -> its position in that stage's default pipeline: lower runs "
        "first, and where two set the same field the later one's value stands. At a stage "
        "not listed it runs only when configured or requested. Where "
        "BRAIN_STAGE_OPTIMIZERS is set, it replaces these defaults."
    )
    changes: ChangesOut = Field(
        description="What its plans may change; a job master that applies part of a plan "
        "(DLRover's PS and worker stages) runs the optimizers whose changes it applies."
    )
