"""The job-profile store.

Sample tables are built for volume (every node of thousands of jobs every 15 s):
narrow rows, a natural primary key that doubles as the duplicate guard, and one
index for "this job, this time window". No surrogate ids on samples.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from brain.db.types import TypedJSON, UTCDateTime, enum_column
from brain.domain import (
    K8S_NAME_MAX,
    EventKind,
    JobStatus,
    PlanStatus,
    RoleBounds,
    RoleSpec,
    Stage,
    Strategy,
)
from brain.optimizing.proposal import PlanBody

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class JobRow(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index(None, "user_name", "created_at"),
        Index(None, "group_key", "status", "finished_at"),
        Index(None, "dataset"),
        Index(None, "status"),
        Index(None, "created_at", "id"),
        # Jobs without a final summary are few (running, or finished moments ago), and
        # every suggestion and create stage looks for related ones among them.
        Index(
            "ix_jobs_unsummarized",
            "id",
            postgresql_where=text("summarized_at IS NULL"),
            sqlite_where=text("summarized_at IS NULL"),
        ),
        # A uid is unique within a namespace (jobs without one form one namespace): no
        # namespace can probe or take another's uids. Leading with uid, it also serves
        # the lookups by uid alone.
        UniqueConstraint("uid", "namespace"),
        Index(
            "uq_jobs_uid_without_namespace",
            "uid",
            unique=True,
            postgresql_where=text("namespace IS NULL"),
            sqlite_where=text("namespace IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    name: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    # "user" is reserved in PostgreSQL, hence the column name.
    user: Mapped[str] = mapped_column("user_name", String(128))
    dataset: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    group_key: Mapped[str] = mapped_column(String(400))
    framework: Mapped[str | None] = mapped_column(String(64))
    strategy: Mapped[Strategy] = mapped_column(enum_column(Strategy, 16))
    namespace: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    cluster: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    gpu_type: Mapped[str | None] = mapped_column(String(128))
    limit_cpu: Mapped[float | None] = mapped_column(Double)
    limit_memory_mib: Mapped[float | None] = mapped_column(Double)
    limit_gpu: Mapped[float | None] = mapped_column(Double)
    # What each role requests: {"worker": RoleSpec(count=4, cpu=8, ...), ...}
    roles: Mapped[dict[str, RoleSpec]] = mapped_column(TypedJSON(dict[str, RoleSpec]), default=dict)
    # Per role, the node counts plans must stay within: {"worker": RoleBounds(2, 8)}.
    role_bounds: Mapped[dict[str, RoleBounds] | None] = mapped_column(
        TypedJSON(dict[str, RoleBounds]), default=dict
    )
    total_steps: Mapped[int | None] = mapped_column(BigInteger)
    # The Kubernetes kind when discovery found the job (ElasticJob, PyTorchJob, ...).
    kind: Mapped[str | None] = mapped_column(String(64))
    # Known only from the cluster's metrics: no job master registered it (yet).
    discovered: Mapped[bool] = mapped_column(default=False, server_default=false())
    status: Mapped[JobStatus] = mapped_column(enum_column(JobStatus, 16))
    exit_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Set once a summary of the job is kept; raw samples may then be aged out.
    summarized_at: Mapped[datetime | None]
    # When a caller that may write every namespace first registered or reached this job
    # by its namespace: an unrestricted token's PUT, a job master naming the namespace
    # (or creating the job), or discovery finding it in the cluster. A bare uid that
    # jobs of several namespaces hold means the one vouched for, if only one is
    # (brain.job_ref): a namespace-limited token can never vouch, so it cannot take a
    # uid away from anyone.
    vouched_at: Mapped[datetime | None]


class NodeRow(Base):
    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("job_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    role: Mapped[str] = mapped_column(String(64))
    index: Mapped[int] = mapped_column(Integer)
    cpu: Mapped[float] = mapped_column(Double, default=0.0)
    memory_mib: Mapped[float] = mapped_column(Double, default=0.0)
    gpu: Mapped[float] = mapped_column(Double, default=0.0)
    status: Mapped[str] = mapped_column(String(32), default="running")
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    # Brain created it from a sample or an event, and no master has registered it since:
    # its samples are the only sign that it runs (``brain.services.silent_nodes``).
    learned: Mapped[bool] = mapped_column(default=False, server_default=false())


class NodeSampleRow(Base):
    __tablename__ = "node_samples"
    __table_args__ = (Index(None, "job_id", "ts"),)

    node_id: Mapped[int] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    ts: Mapped[datetime] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    cpu: Mapped[float] = mapped_column(Double)
    memory_mib: Mapped[float] = mapped_column(Double)
    gpu_util: Mapped[float | None] = mapped_column(Double)
    gpu_memory_mib: Mapped[float | None] = mapped_column(Double)
    gpu_memory_total_mib: Mapped[float | None] = mapped_column(Double)
    # Mean time of one mini-batch on this node since its previous sample (slow nodes).
    step_time_s: Mapped[float | None] = mapped_column(Double)


class SpeedSampleRow(Base):
    __tablename__ = "speed_samples"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    ts: Mapped[datetime] = mapped_column(primary_key=True)
    global_step: Mapped[int] = mapped_column(BigInteger)
    steps_per_sec: Mapped[float] = mapped_column(Double)
    workers: Mapped[int] = mapped_column(Integer)


class EventRow(Base):
    __tablename__ = "events"
    # The natural key makes a retried event list idempotent.
    __table_args__ = (UniqueConstraint("job_id", "kind", "ts", "node_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    node_id: Mapped[int | None] = mapped_column(ForeignKey("nodes.id", ondelete="SET NULL"))
    # "" for job-level events; kept beside node_id so the unique key has no NULLs.
    node_name: Mapped[str] = mapped_column(String(K8S_NAME_MAX), default="")
    ts: Mapped[datetime]
    kind: Mapped[EventKind] = mapped_column(enum_column(EventKind, 32))
    detail: Mapped[str | None] = mapped_column(Text)


class ScalePlanRow(Base):
    __tablename__ = "scale_plans"
    __table_args__ = (Index(None, "job_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    stage: Mapped[Stage] = mapped_column(enum_column(Stage, 16))
    status: Mapped[PlanStatus] = mapped_column(enum_column(PlanStatus, 16))
    body: Mapped[PlanBody] = mapped_column(TypedJSON(PlanBody))
    # An event answered by this plan (OOM recovery); unique so no event is answered twice.
    source_event_id: Mapped[int | None] = mapped_column(
        ForeignKey("events.id", ondelete="SET NULL"), unique=True
    )
    status_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    # When the job master applied it (its report's time); cooldowns count from here.
    applied_at: Mapped[datetime | None]


class MasterReportRow(Base):
    """The latest value of one kind of report a job master sent about its job (strategy,
    hyper-parameters, model features, cumulative custom data), rewritten only on change."""

    __tablename__ = "master_reports"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), primary_key=True)
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    updated_at: Mapped[datetime]


# --- Job summaries -------------------------------------------------------------------
# What history queries and portraits read, so raw samples can be aged out. Units are in
# the column names; "requested" resource-hours count a node's request over its run time,
# "used" ones its mean usage over its sampled duration (see brain.summaries.compute).


class UsageStatsColumns:
    """Usage statistics over a set of node samples (mean, p50, p95, max)."""

    samples: Mapped[int] = mapped_column(Integer)
    cpu_mean_cores: Mapped[float | None] = mapped_column(Double)
    cpu_p50_cores: Mapped[float | None] = mapped_column(Double)
    cpu_p95_cores: Mapped[float | None] = mapped_column(Double)
    cpu_max_cores: Mapped[float | None] = mapped_column(Double)
    memory_mean_mib: Mapped[float | None] = mapped_column(Double)
    memory_p50_mib: Mapped[float | None] = mapped_column(Double)
    memory_p95_mib: Mapped[float | None] = mapped_column(Double)
    memory_max_mib: Mapped[float | None] = mapped_column(Double)
    gpu_util_mean: Mapped[float | None] = mapped_column(Double)
    gpu_util_p50: Mapped[float | None] = mapped_column(Double)
    gpu_util_p95: Mapped[float | None] = mapped_column(Double)
    gpu_util_max: Mapped[float | None] = mapped_column(Double)
    gpu_memory_mean_mib: Mapped[float | None] = mapped_column(Double)
    gpu_memory_p50_mib: Mapped[float | None] = mapped_column(Double)
    gpu_memory_p95_mib: Mapped[float | None] = mapped_column(Double)
    gpu_memory_max_mib: Mapped[float | None] = mapped_column(Double)
    gpu_memory_total_mib: Mapped[float | None] = mapped_column(Double)


class ResourceHoursColumns:
    """Requested and used resource-hours, and the OOMs and failures seen."""

    requested_core_hours: Mapped[float] = mapped_column(Double)
    used_core_hours: Mapped[float] = mapped_column(Double)
    requested_gib_hours: Mapped[float] = mapped_column(Double)
    used_gib_hours: Mapped[float] = mapped_column(Double)
    requested_gpu_hours: Mapped[float] = mapped_column(Double)
    used_gpu_hours: Mapped[float] = mapped_column(Double)
    oom_count: Mapped[int] = mapped_column(Integer)
    failure_count: Mapped[int] = mapped_column(Integer)


class JobSummaryRow(ResourceHoursColumns, Base):
    """One row per summarized job. The job's keys are copied so that portraits and
    history filter and group without joining ``jobs``."""

    __tablename__ = "job_summaries"
    __table_args__ = (
        Index(None, "user_name", "ended_at"),
        Index(None, "user_name", "dataset", "ended_at"),
        Index(None, "group_key", "ended_at"),
        Index(None, "name", "ended_at"),
        Index(None, "ended_at"),
    )

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    # False while the job runs: a later summary replaces this one.
    final: Mapped[bool]
    computed_at: Mapped[datetime]
    uid: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    name: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    user: Mapped[str] = mapped_column("user_name", String(128))
    dataset: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    group_key: Mapped[str] = mapped_column(String(400))
    gpu_type: Mapped[str | None] = mapped_column(String(128))
    # History and portraits read one namespace's runs unless pooling is configured.
    namespace: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    status: Mapped[JobStatus] = mapped_column(enum_column(JobStatus, 16))
    started_at: Mapped[datetime | None]
    # finished_at, else the last sample: what portrait windows and history filter on.
    ended_at: Mapped[datetime]
    run_seconds: Mapped[float] = mapped_column(Double)
    node_count: Mapped[int] = mapped_column(Integer)
    samples: Mapped[int] = mapped_column(BigInteger)
    speed_mean_steps_per_s: Mapped[float | None] = mapped_column(Double)
    speed_per_worker_mean_steps_per_s: Mapped[float | None] = mapped_column(Double)
    # [{plan_id, stage, optimizers, applied_at, speed_before_steps_per_s, ...}]
    plans: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # The bucket grid of the chart series (no buckets: no samples) and the speed on it,
    # packed by brain.summaries.series.
    series_start: Mapped[datetime | None]
    series_bucket_seconds: Mapped[float | None] = mapped_column(Double)
    series_buckets: Mapped[int] = mapped_column(Integer)
    speed_series: Mapped[bytes | None]
    # The savings report's figures of a final summary (brain.savings.stored): the main
    # role's requested, used and Brain-replayed hours; None until the replay has run.
    savings_computed_at: Mapped[datetime | None]
    savings_node_hours: Mapped[float | None] = mapped_column(Double)
    savings_requested_core_hours: Mapped[float | None] = mapped_column(Double)
    savings_used_core_hours: Mapped[float | None] = mapped_column(Double)
    savings_brain_core_hours: Mapped[float | None] = mapped_column(Double)
    savings_requested_gib_hours: Mapped[float | None] = mapped_column(Double)
    savings_used_gib_hours: Mapped[float | None] = mapped_column(Double)
    savings_brain_gib_hours: Mapped[float | None] = mapped_column(Double)
    savings_requested_gpu_hours: Mapped[float | None] = mapped_column(Double)
    savings_used_gpu_hours: Mapped[float | None] = mapped_column(Double)
    savings_brain_gpu_hours: Mapped[float | None] = mapped_column(Double)
    # Node-hours replayed on stored samples (0: none stored, sized by the create stage).
    savings_replayed_node_hours: Mapped[float | None] = mapped_column(Double)
    savings_brain_ooms: Mapped[int | None] = mapped_column(Integer)


class RoleSummaryRow(UsageStatsColumns, ResourceHoursColumns, Base):
    """One row per role of a summarized job; statistics pool the samples of its nodes."""

    __tablename__ = "role_summaries"

    job_id: Mapped[int] = mapped_column(
        ForeignKey("job_summaries.job_id", ondelete="CASCADE"), primary_key=True
    )
    role: Mapped[str] = mapped_column(String(64), primary_key=True)
    node_count: Mapped[int] = mapped_column(Integer)
    # Request per node, mean over the role's nodes.
    cpu_request_cores: Mapped[float] = mapped_column(Double)
    memory_request_mib: Mapped[float] = mapped_column(Double)
    gpu_request: Mapped[float] = mapped_column(Double)
    # Usage chart of the role on the job's bucket grid, packed by brain.summaries.series.
    usage_series: Mapped[bytes | None]


class NodeSummaryRow(UsageStatsColumns, ResourceHoursColumns, Base):
    """One row per node of a summarized job (what ``HistoricalJob.nodes`` is built from)."""

    __tablename__ = "node_summaries"
    # Deleting a node (cascading from its job) looks its summary up by node.
    __table_args__ = (Index(None, "node_id"),)

    job_id: Mapped[int] = mapped_column(
        ForeignKey("job_summaries.job_id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[int] = mapped_column(
        ForeignKey("nodes.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(K8S_NAME_MAX))
    role: Mapped[str] = mapped_column(String(64))
    cpu_request_cores: Mapped[float] = mapped_column(Double)
    memory_request_mib: Mapped[float] = mapped_column(Double)
    gpu_request: Mapped[float] = mapped_column(Double)
    first_sample_at: Mapped[datetime | None]
    last_sample_at: Mapped[datetime | None]
    run_seconds: Mapped[float] = mapped_column(Double)
    sampled_seconds: Mapped[float] = mapped_column(Double)


class JobUsageDayRow(Base):
    """A summarized run's hours on one UTC day: one row per day the run touched, from
    its job summary and rewritten with it (``brain.summaries.usage_days``). Windows and
    weeks of the console sum these instead of computing every run's share per request.

    A run's hours are spread evenly over its run time (as a window's share counts them),
    so a day holds the part of the run inside it; the day the run ended also holds the
    job itself (``jobs`` and its status's count) and its OOM kills and failures, which
    are not spread. The job's keys, end and how long it is believed to have run are
    copied onto every row, so a window filters and groups without a join.
    """

    __tablename__ = "job_usage_days"
    __table_args__ = (
        Index(None, "ended_at"),
        Index(None, "namespace", "ended_at"),
        Index(None, "user_name", "ended_at"),
        Index(None, "group_key", "ended_at"),
        Index(None, "day"),
    )

    job_id: Mapped[int] = mapped_column(
        ForeignKey("job_summaries.job_id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[datetime] = mapped_column(primary_key=True)  # 00:00 UTC
    namespace: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    user: Mapped[str] = mapped_column("user_name", String(128))
    group_key: Mapped[str] = mapped_column(String(400))
    dataset: Mapped[str | None] = mapped_column(String(K8S_NAME_MAX))
    gpu_type: Mapped[str | None] = mapped_column(String(128))
    # The run's end (its summary's ended_at) and the Monday of its ISO week: a job
    # counts in the window and the week it ended in.
    ended_at: Mapped[datetime]
    end_week: Mapped[datetime]
    # The longer of the run and its samples' span: believed while within the limit.
    believable_seconds: Mapped[float] = mapped_column(Double)
    # The part of the run on this day: from_at to to_at, run_seconds long.
    from_at: Mapped[datetime]
    to_at: Mapped[datetime]
    run_seconds: Mapped[float] = mapped_column(Double)
    requested_core_hours: Mapped[float] = mapped_column(Double)
    used_core_hours: Mapped[float] = mapped_column(Double)
    requested_gib_hours: Mapped[float] = mapped_column(Double)
    used_gib_hours: Mapped[float] = mapped_column(Double)
    requested_gpu_hours: Mapped[float] = mapped_column(Double)
    used_gpu_hours: Mapped[float] = mapped_column(Double)
    # 1 on the day the run ended (0 before): the job, by its status, and its events.
    jobs: Mapped[int] = mapped_column(Integer)
    running: Mapped[int] = mapped_column(Integer)
    succeeded: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)
    stopped: Mapped[int] = mapped_column(Integer)
    oom_count: Mapped[int] = mapped_column(Integer)
    failure_count: Mapped[int] = mapped_column(Integer)


class ApiToken(Base):
    """A bearer token for the API. The secret is never stored, only its SHA-256."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    # The secret's first characters, so `brain token list` can show which one is which.
    prefix: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(8))  # a brain.services.tokens.TokenScope
    # Namespaces whose jobs the token may touch; null means every namespace.
    namespaces: Mapped[list[str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class TokenStateRow(Base):
    """Tokens as a whole, in one row (id 1): a counter every change of a token raises, so
    each server process sees at its next check that what it cached is stale; and since
    when tokens have existed, so a loopback server stays closed once one has (only
    ``brain token reopen`` clears it). No row reads as version 0, never closed."""

    __tablename__ = "token_state"

    id: Mapped[int] = mapped_column(primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
    closed_since: Mapped[datetime | None]


class ClusterStateRow(Base):
    """The newest cluster state of each source (one row per source, replaced each time):
    free capacity and pending demand, see ``brain.domain.ClusterState``."""

    __tablename__ = "cluster_states"

    source: Mapped[str] = mapped_column(String(32), primary_key=True)
    ts: Mapped[datetime]
    nodes: Mapped[int] = mapped_column(Integer)
    free_cpu: Mapped[float | None] = mapped_column(Double)
    free_memory_mib: Mapped[float | None] = mapped_column(Double)
    free_gpu: Mapped[float | None] = mapped_column(Double)
    pending_pods: Mapped[int | None] = mapped_column(Integer)
    pending_cpu: Mapped[float | None] = mapped_column(Double)
    pending_memory_mib: Mapped[float | None] = mapped_column(Double)
    pending_gpu: Mapped[float | None] = mapped_column(Double)
    queued_jobs: Mapped[int | None] = mapped_column(Integer)
