"""What Brain's defaults would have allocated for finished jobs, and what applied plans saved."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field


class SavingsBy(StrEnum):
    namespace = "namespace"
    group = "group"


class SavingsRowOut(BaseModel):
    key: str = Field(description="The namespace (`-`: none) or group key; `total` for the sum.")
    jobs: int = Field(description="Finished jobs that ended in the window.")
    replayed_jobs: int = Field(
        description="Jobs whose stored samples were replayed (the others are sized by the "
        "create stage alone)."
    )
    node_hours: float = Field(description="Run hours x nodes of each job's main role.")
    requested_core_h: float = Field(description="Core-hours the main roles requested.")
    used_core_h: float = Field(description="Core-hours they used.")
    brain_core_h: float = Field(description="Core-hours Brain's default pipeline would allocate.")
    requested_gib_h: float = Field(description="Memory GiB-hours requested.")
    used_gib_h: float = Field(description="Memory GiB-hours used.")
    brain_gib_h: float = Field(
        description="Memory GiB-hours Brain would allocate (re-runs after restarts included)."
    )
    requested_gpu_h: float = Field(description="GPU-hours requested.")
    used_gpu_h: float = Field(description="GPU-hours used.")
    brain_gpu_h: float = Field(
        description="GPU-hours Brain would allocate: per card, max(mean GPU utilization, "
        "peak GPU memory) / the target, from the runs' GPU series (as requested without)."
    )
    replayed_node_hours: float = Field(description="Hours of the replayed nodes' series.")
    brain_ooms: int = Field(description="OOM kills in the replay.")
    brain_jobs_with_oom: int = Field(description="Replayed jobs with at least one OOM kill.")
    brain_ooms_per_1000h: float | None = Field(
        description="OOM kills per 1,000 replayed node-hours (null: nothing replayed)."
    )
    plans_applied: int = Field(description="Applied plans of these jobs.")
    plans_saved_core_h: float = Field(
        description="Core-hours applied plans saved: role totals before minus after each "
        "plan, times the hours from its application to the job's end (negative: added)."
    )
    plans_saved_gib_h: float = Field(description="Memory GiB-hours applied plans saved.")
    plans_saved_gpu_h: float = Field(description="GPU-hours applied plans saved.")
    all_roles_requested_core_h: float = Field(
        description="Core-hours every role of the jobs requested, as the console and the "
        "portraits count them (the fields above count each job's main role only)."
    )
    all_roles_used_core_h: float = Field(description="Core-hours every role used.")
    all_roles_requested_gib_h: float = Field(description="Memory GiB-hours every role requested.")
    all_roles_used_gib_h: float = Field(description="Memory GiB-hours every role used.")
    all_roles_requested_gpu_h: float = Field(description="GPU-hours every role requested.")
    all_roles_used_gpu_h: float = Field(description="GPU-hours every role used.")
    requested_usd: float | None = Field(
        description="Dollars of the requested hours at the prices in effect (BRAIN_PRICE_*, "
        "else the default table; unpriced resources add nothing; null: nothing priced)."
    )
    used_usd: float | None = Field(description="Dollars of the used hours (null: no price).")
    brain_usd: float | None = Field(
        description="Dollars of the hours Brain would allocate (null: no price)."
    )
    plans_saved_usd: float | None = Field(
        description="Dollars applied plans saved (null: no price)."
    )
    all_roles_requested_usd: float | None = Field(
        description="Dollars of every role's requested hours (null: no price)."
    )
    all_roles_used_usd: float | None = Field(
        description="Dollars of every role's used hours (null: no price)."
    )


class SavingsOut(BaseModel):
    days: int
    priced: bool = Field(
        description="Whether anything is priced (the `*_usd` figures): a BRAIN_PRICE_* or the "
        "default table (off with BRAIN_PRICE_DEFAULTS=false)."
    )
    prices: str | None = Field(
        None,
        description='The prices the dollars are at: "the configured prices", "default prices '
        '(source: ...)" or both (which resources are at the defaults); null: nothing priced.',
    )
    since: datetime = Field(description="Jobs that ended at or after this time.")
    by: SavingsBy
    rows: list[SavingsRowOut]
    total: SavingsRowOut
