"""Job registration, update and listing."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from api.schemas.attributes import validated_from
from api.schemas.common import (
    Cores,
    Gpus,
    JobCores,
    JobGpus,
    JobMiB,
    MiB,
    Name,
    Namespace,
    NodeCount,
    Number,
    Text,
    Timestamp,
    UserName,
    name_of,
)
from brain.bounds import INT64_MAX, MAX_ROLES
from brain.db.models import JobRow
from brain.domain import JobStatus, RoleBounds, RoleSpec, Strategy
from brain.services.jobs import JobChanges, JobInput

# A stored free text comes back in every job listing: bounded like event details and
# plan status messages, so one caller cannot make `GET /jobs` answer megabytes.
EXIT_REASON_CHARS = 4000


class Limits(BaseModel):
    """Upper bounds for the whole job (sum over all nodes)."""

    model_config = ConfigDict(extra="forbid")
    cpu: JobCores | None = None
    memory_mib: JobMiB | None = None
    gpu: JobGpus | None = None


class RoleResources(BaseModel):
    """Requested resources of one role: ``count`` nodes, each of this size, and for an
    elastic role the node counts plans must stay within."""

    model_config = ConfigDict(extra="forbid")
    count: NodeCount = Field(description="Number of nodes of this role.")
    cpu: Cores = 0
    memory_mib: MiB = 0
    gpu: Gpus = 0
    min_count: NodeCount | None = Field(
        None,
        description="Fewest nodes of this role any plan may leave (Volcano's minAvailable); "
        "at most `count`. Nodes above it are elastic: removed first, added last. "
        "Null: no minimum.",
    )
    max_count: NodeCount | None = Field(
        None,
        description="Most nodes of this role any plan may ask for; at least `count` and "
        "`min_count`. Null: no maximum (the job's limits still apply).",
    )

    @field_validator("min_count")
    @classmethod
    def _min_within_count(cls, value: int | None, info: ValidationInfo) -> int | None:
        count = info.data.get("count")
        if value is not None and count is not None and value > count:
            raise ValueError(f"min_count {value} is above count {count}")
        return value

    @field_validator("max_count")
    @classmethod
    def _max_within_bounds(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return value
        for other in ("count", "min_count"):
            given = info.data.get(other)
            if given is not None and value < given:
                raise ValueError(f"max_count {value} is below {other} {given}")
        return value

    @classmethod
    def of(cls, spec: RoleSpec, bounds: RoleBounds | None = None) -> RoleResources:
        """A stored role; sizes it does not give read as 0, as when it was registered."""
        bounds = bounds or RoleBounds()
        return cls.model_construct(
            count=spec.count or 0,
            cpu=spec.cpu or 0,
            memory_mib=spec.memory_mib or 0,
            gpu=spec.gpu or 0,
            min_count=bounds.min_count,
            max_count=bounds.max_count,
        )

    def spec(self) -> RoleSpec:
        return RoleSpec(count=self.count, cpu=self.cpu, memory_mib=self.memory_mib, gpu=self.gpu)

    def bounds(self) -> RoleBounds | None:
        if self.min_count is None and self.max_count is None:
            return None
        return RoleBounds(min_count=self.min_count, max_count=self.max_count)


GroupKey = name_of(400)
Framework = name_of(64, min_length=0)
GpuType = name_of(128, min_length=0)
RoleName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")]


class JobSpec(BaseModel):
    """A job as its job master registers it. Historical jobs may carry past times."""

    model_config = ConfigDict(extra="forbid")
    name: Name
    user: UserName
    dataset: Name | None = None
    group_key: GroupKey | None = Field(
        None, description="Key of recurring runs; defaults to `<user>/<name>`."
    )
    framework: Framework | None = None
    strategy: Strategy = Strategy.ps
    namespace: Namespace | None = None
    cluster: Name | None = None
    gpu_type: GpuType | None = None
    limits: Limits = Field(default_factory=Limits)
    roles: dict[RoleName, RoleResources] = Field(
        default_factory=dict,
        max_length=MAX_ROLES,
        description=f"Requested resources per role (ps, chief, worker, ...); at most {MAX_ROLES} "
        "roles.",
    )
    total_steps: Annotated[int, Field(ge=1, le=INT64_MAX), Number] | None = None
    status: JobStatus = JobStatus.pending
    exit_reason: Text | None = Field(None, max_length=EXIT_REASON_CHARS)
    created_at: Timestamp | None = None
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None

    def to_input(self) -> JobInput:
        return JobInput(
            name=self.name,
            user=self.user,
            strategy=self.strategy,
            dataset=self.dataset,
            group_key=self.group_key,
            framework=self.framework,
            namespace=self.namespace,
            cluster=self.cluster,
            gpu_type=self.gpu_type,
            limit_cpu=self.limits.cpu,
            limit_memory_mib=self.limits.memory_mib,
            limit_gpu=self.limits.gpu,
            roles={role: spec.spec() for role, spec in self.roles.items()},
            role_bounds={
                role: bounds
                for role, spec in self.roles.items()
                if (bounds := spec.bounds()) is not None
            },
            total_steps=self.total_steps,
            status=self.status,
            exit_reason=self.exit_reason,
            created_at=self.created_at,
            started_at=self.started_at,
            finished_at=self.finished_at,
        )


class JobPatch(BaseModel):
    """Status, exit reason and times; omitted fields stay as they are."""

    model_config = ConfigDict(extra="forbid")
    # Omitted keeps the status; null is not a status (hidden from the schema).
    status: JobStatus | SkipJsonSchema[None] = None
    exit_reason: Text | None = Field(None, max_length=EXIT_REASON_CHARS)
    started_at: Timestamp | None = None
    finished_at: Timestamp | None = None

    @field_validator("status")
    @classmethod
    def _status_not_null(cls, value: JobStatus | None) -> JobStatus:
        if value is None:
            raise ValueError("status cannot be null; omit it to keep the current status")
        return value

    @model_validator(mode="after")
    def _not_empty(self) -> JobPatch:
        if not self.model_fields_set:
            raise ValueError("give at least one of status, exit_reason, started_at, finished_at")
        return self

    def to_changes(self) -> JobChanges:
        """The service's changes, keeping which fields were given."""
        return JobChanges.model_validate(self.model_dump(exclude_unset=True))


class JobOut(BaseModel):
    uid: str
    name: str
    user: str
    dataset: str | None
    group_key: str
    framework: str | None
    strategy: Strategy
    namespace: str | None
    cluster: str | None
    gpu_type: str | None
    limits: Limits
    roles: dict[str, RoleResources]
    total_steps: int | None
    kind: str | None = Field(
        None, description="The Kubernetes kind discovery found the job as (e.g. PyTorchJob)."
    )
    discovered: bool = Field(
        False,
        description="Known only from the cluster's metrics (Prometheus discovery); a "
        "registration by the job master takes the job over.",
    )
    status: JobStatus
    exit_reason: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, job: JobRow) -> JobOut:
        """The stored job; fields not given here are the row's of the same name."""
        return validated_from(
            cls,
            job,
            limits=Limits(cpu=job.limit_cpu, memory_mib=job.limit_memory_mib, gpu=job.limit_gpu),
            roles={
                role: RoleResources.of(spec, (job.role_bounds or {}).get(role))
                for role, spec in (job.roles or {}).items()
            },
        )


class JobPage(BaseModel):
    items: list[JobOut]
    next_cursor: str | None = Field(
        None, description="Pass as `cursor` for the next page; null on the last page."
    )


class JobDeleted(BaseModel):
    """What `DELETE /jobs/{uid}` removed."""

    uid: str
    namespace: str | None
    deleted_rows: dict[str, int] = Field(
        description="Rows deleted with the job, per kind: node_samples, speed_samples, "
        "plans, events, node_summaries, role_summaries, job_usage_days, job_summaries, "
        "master_reports, nodes."
    )
