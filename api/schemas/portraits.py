"""Job portraits and aggregates over users, groups, datasets and GPU types.

Units are in the field names: cores, MiB, GPU counts, utilizations as fractions 0..1,
seconds, and resource-hours (core-hours, GiB-hours, GPU-hours).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.attributes import validated_from
from brain.costs import Cost, Prices
from brain.db.models import JobSummaryRow, NodeSummaryRow, RoleSummaryRow
from brain.history.plausible import DEFAULT_MAX_RUN_S, excluded_reason
from brain.portraits.jobs import JobPortrait, Totals
from brain.portraits.priorities import PriorityClass
from brain.summaries import series as series_
from brain.summaries.hours import Hours


class RankingBy(StrEnum):
    user = "user"
    dataset = "dataset"
    group = "group"
    gpu_type = "gpu_type"


class WasteSort(StrEnum):
    """The resource whose waste ranks first; ties go to the others (GPU, CPU, memory)."""

    gpu = "gpu"
    cpu = "cpu"
    memory = "memory"


class CpuHours(BaseModel):
    requested_core_hours: float = Field(description="CPU request × run time, core-hours.")
    used_core_hours: float = Field(description="Mean CPU used × sampled time, core-hours.")
    waste_core_hours: float = Field(description="Requested − used core-hours.")
    efficiency: float | None = Field(description="Used / requested core-hours (0..1, >1 bursts).")


class MemoryHours(BaseModel):
    requested_gib_hours: float = Field(description="Memory request × run time, GiB-hours.")
    used_gib_hours: float = Field(description="Mean memory used × sampled time, GiB-hours.")
    waste_gib_hours: float = Field(description="Requested − used GiB-hours.")
    efficiency: float | None = Field(description="Used / requested GiB-hours.")


class GpuHours(BaseModel):
    requested_gpu_hours: float = Field(description="GPUs requested × run time, GPU-hours.")
    used_gpu_hours: float = Field(
        description="Mean GPU utilization × GPUs requested × sampled time, GPU-hours."
    )
    waste_gpu_hours: float = Field(description="Requested − used GPU-hours.")
    efficiency: float | None = Field(description="Used / requested GPU-hours.")


class ResourceHours(BaseModel):
    """Requested and used resource-hours.

    Requested = Σ over nodes of request × run time (registration or first sample until
    the node's, else the job's, end); used = Σ over nodes of mean usage × sampled time
    (first to last sample); GPU-hours used are mean GPU utilization × GPUs requested ×
    sampled time. Waste = requested − used (negative when usage exceeds the request);
    efficiency = used / requested (null when nothing was requested).
    """

    cpu: CpuHours
    memory: MemoryHours
    gpu: GpuHours
    efficiency_score: float | None = Field(
        description="Mean efficiency over the resources requested, each capped at 1 (0..1)."
    )

    @classmethod
    def of(cls, hours: Hours) -> ResourceHours:
        return cls(
            cpu=CpuHours(
                requested_core_hours=hours.requested_core_hours,
                used_core_hours=hours.used_core_hours,
                waste_core_hours=hours.waste("cpu"),
                efficiency=hours.efficiency("cpu"),
            ),
            memory=MemoryHours(
                requested_gib_hours=hours.requested_gib_hours,
                used_gib_hours=hours.used_gib_hours,
                waste_gib_hours=hours.waste("memory"),
                efficiency=hours.efficiency("memory"),
            ),
            gpu=GpuHours(
                requested_gpu_hours=hours.requested_gpu_hours,
                used_gpu_hours=hours.used_gpu_hours,
                waste_gpu_hours=hours.waste("gpu"),
                efficiency=hours.efficiency("gpu"),
            ),
            efficiency_score=hours.efficiency_score(),
        )


class CostOut(BaseModel):
    """Dollars at the prices in effect (BRAIN_PRICE_*, else the default table that `brain
    config` and the console name): only priced resources count."""

    # Read from a brain.costs.Cost, field by field.
    model_config = ConfigDict(from_attributes=True)
    requested_usd: float = Field(description="What the requested resource-hours cost.")
    used_usd: float = Field(description="What the used resource-hours cost.")
    waste_usd: float = Field(description="Requested − used, dollars.")


COST_DESCRIPTION = (
    "Dollars at BRAIN_PRICE_*, else at the default prices (Google Cloud on-demand, "
    "us-central1; see `brain config`); null when nothing is priced (BRAIN_PRICE_DEFAULTS=false "
    "and no price set)."
)


def priced(prices: Prices | None, hours: Hours, gpu_type: str | None) -> CostOut | None:
    if prices is None or not prices.configured:
        return None
    return CostOut.model_validate(prices.of(hours, gpu_type))


class UsageStat(BaseModel):
    """Over the samples; null without samples. p50/p95 interpolate linearly."""

    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None


class Usage(BaseModel):
    """Used resources over samples: CPU in cores, memory in MiB, GPU utilization 0..1,
    GPU memory in MiB."""

    samples: int = Field(description="Node samples the statistics are over.")
    cpu_cores: UsageStat
    memory_mib: UsageStat
    gpu_util: UsageStat
    gpu_memory_mib: UsageStat
    gpu_memory_total_mib: float | None = Field(description="GPU memory of the device, MiB.")

    @classmethod
    def of(cls, row: RoleSummaryRow | NodeSummaryRow) -> Usage:
        def stat(pattern: str) -> UsageStat:
            return UsageStat(
                **{k: getattr(row, pattern.format(k)) for k in ("mean", "p50", "p95", "max")}
            )

        return cls(
            samples=row.samples,
            cpu_cores=stat("cpu_{}_cores"),
            memory_mib=stat("memory_{}_mib"),
            gpu_util=stat("gpu_util_{}"),
            gpu_memory_mib=stat("gpu_memory_{}_mib"),
            gpu_memory_total_mib=row.gpu_memory_total_mib,
        )


class RequestedAndUsed(BaseModel):
    """What each node requested against what was used, with resource-hours and failures."""

    cpu_request_cores: float = Field(
        description="CPU request per node (for a role: the mean over its nodes)."
    )
    memory_request_mib: float = Field(
        description="Memory request per node (for a role: the mean over its nodes)."
    )
    gpu_request: float = Field(description="GPUs per node (for a role: the mean over its nodes).")
    used: Usage
    hours: ResourceHours
    oom_count: int
    failure_count: int

    @classmethod
    def of(cls, row: RoleSummaryRow | NodeSummaryRow) -> Self:
        """The stored role (RoleOut) or node (NodeSummaryOut); fields not given here are
        the row's of the same name."""
        return validated_from(cls, row, used=Usage.of(row), hours=ResourceHours.of(Hours.of(row)))


class RoleOut(RequestedAndUsed):
    """One role: what each node requested against what the role's nodes used (pooled)."""

    role: str
    node_count: int


class PlanEffect(BaseModel):
    """An applied plan and the training speed under the configuration before and after."""

    plan_id: int
    stage: str
    optimizers: list[str]
    applied_at: datetime
    speed_before_steps_per_s: float | None
    speed_after_steps_per_s: float | None
    per_worker_before_steps_per_s: float | None
    per_worker_after_steps_per_s: float | None


class FromSummary(BaseModel):
    """A model read from a stored job summary: its resource-hours, priced where prices are
    set, and the row's own fields of the same names."""

    @classmethod
    def of(cls, row: JobSummaryRow, prices: Prices | None = None) -> Self:
        hours = Hours.of(row)
        return validated_from(
            cls, row, hours=ResourceHours.of(hours), cost=priced(prices, hours, row.gpu_type)
        )


class JobSummaryOut(FromSummary):
    uid: str
    name: str
    user: str
    dataset: str | None
    group_key: str
    gpu_type: str | None
    status: str
    final: bool = Field(description="False while the job runs: figures as of `computed_at`.")
    computed_at: datetime
    started_at: datetime | None
    ended_at: datetime = Field(description="finished_at, else the last sample.")
    run_seconds: float = Field(description="started_at (else first sample) to ended_at.")
    node_count: int
    samples: int = Field(description="Node samples summarized.")
    hours: ResourceHours
    oom_count: int
    failure_count: int
    speed_mean_steps_per_s: float | None = Field(description="Mean training speed.")
    speed_per_worker_mean_steps_per_s: float | None = Field(
        description="Mean of steps/s divided by the workers of each speed sample."
    )
    plans: list[PlanEffect]
    cost: CostOut | None = Field(None, description=COST_DESCRIPTION)


class UsageSeries(BaseModel):
    """A role's usage per bucket, column by column (index i of each list is bucket i)."""

    ts: list[datetime] = Field(description="Start of each bucket.")
    samples: list[int] = Field(description="Node samples in the bucket.")
    cpu_mean_cores: list[float | None] = Field(description="Mean CPU per node.")
    cpu_max_cores: list[float | None] = Field(description="Largest CPU of any node.")
    memory_mean_mib: list[float | None] = Field(description="Mean memory per node.")
    memory_max_mib: list[float | None] = Field(description="Largest memory of any node.")
    gpu_util_mean: list[float | None] = Field(description="Mean GPU utilization (0..1).")
    gpu_memory_max_mib: list[float | None] = Field(description="Largest GPU memory used.")


class SpeedSeries(BaseModel):
    """Training speed per bucket, column by column."""

    ts: list[datetime] = Field(description="Start of each bucket.")
    samples: list[int] = Field(description="Speed samples in the bucket.")
    steps_per_sec_mean: list[float | None] = Field(description="Mean steps/s.")
    workers_max: list[int | None] = Field(description="Most workers reported.")


class PortraitSeriesOut(BaseModel):
    """Time series for charts in equal buckets; buckets without samples are left out."""

    bucket_seconds: float | None = Field(description="Width of each bucket; null: no samples.")
    roles: dict[str, UsageSeries]
    speed: SpeedSeries | None = Field(description="Null when the job reported no speed.")

    @classmethod
    def of(cls, portrait: JobPortrait) -> PortraitSeriesOut:
        grid = portrait.grid
        if grid is None:
            return cls(bucket_seconds=None, roles={}, speed=None)
        speed = portrait.speed_series
        return cls(
            bucket_seconds=grid.bucket_seconds,
            roles={
                role: UsageSeries(**_with_times(grid, columns))
                for role, columns in portrait.role_series.items()
            },
            speed=None if speed is None else SpeedSeries(**_with_times(grid, speed)),
        )


def _with_times(grid: series_.Grid, columns: series_.Columns) -> dict:
    values = series_.as_lists({k: v for k, v in columns.items() if k != "bucket"})
    return {"ts": grid.bucket_starts(columns["bucket"]), **values}


class JobPortraitOut(BaseModel):
    summary: JobSummaryOut
    roles: list[RoleOut]
    series: PortraitSeriesOut
    excluded_reason: str | None = Field(
        None,
        description="Why related history, portraits and priorities leave this run out "
        "(longer than BRAIN_HISTORY_MAX_RUN_DAYS); null: they count it.",
    )

    @classmethod
    def of(
        cls,
        portrait: JobPortrait,
        prices: Prices | None = None,
        max_run_s: float = DEFAULT_MAX_RUN_S,
    ) -> JobPortraitOut:
        return cls(
            summary=JobSummaryOut.of(portrait.summary, prices),
            roles=[RoleOut.of(r) for r in portrait.roles],
            series=PortraitSeriesOut.of(portrait),
            excluded_reason=excluded_reason(portrait.summary, max_run_s),
        )


class NodeSummaryOut(RequestedAndUsed):
    name: str
    role: str
    first_sample_at: datetime | None
    last_sample_at: datetime | None
    run_seconds: float = Field(description="Registration or first sample until the node's end.")
    sampled_seconds: float = Field(description="First to last sample.")


class Page(BaseModel):
    total: int = Field(description="Items in all pages.")
    limit: int
    offset: int
    next_offset: int | None = Field(description="`offset` of the next page; null on the last.")

    @staticmethod
    def next_of(offset: int, limit: int, total: int) -> int | None:
        return offset + limit if offset + limit < total else None


class NodePage(Page):
    items: list[NodeSummaryOut]


class TotalsOut(BaseModel):
    jobs: int = Field(description="Jobs ended in the window (running ones: summarized so far).")
    finished: int
    succeeded: int
    failed: int
    stopped: int
    running: int
    success_rate: float | None = Field(description="succeeded / finished; null if none finished.")
    run_hours: float = Field(description="Σ job run time, hours.")
    hours: ResourceHours
    oom_count: int
    failure_count: int
    cost: CostOut | None = Field(None, description=COST_DESCRIPTION)

    @classmethod
    def of(cls, totals: Totals, cost: Cost | None = None) -> TotalsOut:
        """The totals; fields not given here are theirs of the same name (``cost``, a
        Cost, is read as a CostOut)."""
        return validated_from(
            cls,
            totals,
            run_hours=totals.run_seconds / 3600.0,
            hours=ResourceHours.of(totals.hours),
            oom_count=totals.hours.oom_count,
            failure_count=totals.hours.failure_count,
            cost=cost,
        )


class WastefulJob(FromSummary):
    uid: str
    name: str
    user: str
    dataset: str | None
    group_key: str
    gpu_type: str | None
    status: str
    ended_at: datetime
    hours: ResourceHours
    oom_count: int
    cost: CostOut | None = Field(None, description=COST_DESCRIPTION)


class WastefulPage(Page):
    items: list[WastefulJob] = Field(description="Most waste first.")


class PriorityOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    score: float | None = Field(
        description="efficiency − oom_weight × OOM rate, clamped to 0..1 (higher is better); "
        "null when not judged (too few jobs, or nothing requested)."
    )
    efficiency: float | None = Field(
        description="Mean over the resources requested of used / requested resource-hours, "
        "each capped at 1 (0..1)."
    )
    oom_rate: float = Field(description="OOM kills per job in the window, capped at 1.")
    priority_class: PriorityClass = Field(
        description="Suggested class for the owner's next jobs: low below "
        "BRAIN_PRIORITY_LOW_BELOW, high from BRAIN_PRIORITY_HIGH_FROM, else normal."
    )
    reason: str = Field(description="The evidence and the threshold that decided the class.")


class OwnerPortraitOut(BaseModel):
    owner: str = Field(description="`user` or `group`.")
    key: str = Field(description="The user name or group key.")
    days: int
    since: datetime = Field(description="Jobs ended at or after this time are counted.")
    totals: TotalsOut
    priority: PriorityOut = Field(
        description="The owner's priority from utilization (as GET /api/v1/priorities)."
    )
    wasteful_jobs: WastefulPage


class RankingRow(BaseModel):
    key: str | None = Field(description="The user, dataset, group or GPU type (null: none set).")
    totals: TotalsOut


class RankingOut(Page):
    by: RankingBy
    sort: WasteSort
    days: int
    since: datetime
    items: list[RankingRow] = Field(description="Most waste first.")
