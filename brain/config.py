"""Configuration from ``BRAIN_*`` environment variables.

Nothing here is built at import time: callers create ``Settings()`` when they start.
"""

from __future__ import annotations

import math
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import AwareDatetime, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from brain import bounds
from brain.costs import (
    DEFAULT_CORE_HOUR_USD,
    DEFAULT_GIB_HOUR_USD,
    DEFAULT_GPU_HOUR_USD_BY_TYPE,
    DEFAULT_PRICE_SOURCE,
    Prices,
)
from brain.data_dir import SHOWN_DEFAULT_URL, default_database_url
from brain.domain import Resources, Stage
from brain.durations import duration_s


class CollectorSettings(BaseSettings):
    """The Prometheus collector's settings (``collectors/``; all PromQL lives in
    collectors/queries.py). Read from the same flat ``BRAIN_*`` variables as the rest, so
    ``BRAIN_PROMETHEUS_URL`` stays ``BRAIN_PROMETHEUS_URL``; ``Settings.collector`` holds it."""

    model_config = SettingsConfigDict(env_prefix="BRAIN_", extra="ignore")

    prometheus_url: str | None = Field(
        None, description="Prometheus to scrape node load from; unset disables the collector."
    )
    prometheus_token: SecretStr | None = Field(None, description="Bearer token for Prometheus.")
    prometheus_username: str | None = Field(None, description="Basic-auth user for Prometheus.")
    prometheus_password: SecretStr | None = Field(None, description="Basic-auth password.")
    prometheus_ca_file: str | None = Field(None, description="CA bundle for Prometheus TLS.")
    collect_interval_s: float = Field(
        60, gt=0, description="Seconds between two collector cycles (serve and `brain collect`)."
    )
    collect_lookback_s: int = Field(
        3600,
        ge=60,
        description="How far back the first collection of a job without stored points reaches.",
    )
    collect_delay_s: int = Field(
        30,
        ge=0,
        description="Points younger than this wait for the next cycle, so every scrape has landed.",
    )
    node_silent_after_s: int = Field(
        300,
        ge=60,
        description="A node Brain learned from samples (no master registered it) whose newest "
        "sample is this many seconds older than its job's newest is `stopped` (gone), and runs "
        "again when heard again; several collector cycles, so a missed scrape stops no node. "
        "Collected and pushed samples alike.",
    )
    collect_mapping: str = Field(
        "pod_name",
        pattern="^(pod_name|labels)$",
        description="How series are tied to jobs: pod_name (BRAIN_POD_NAME_PATTERN on the pod "
        "label) or labels (BRAIN_JOB_LABEL / BRAIN_ROLE_LABEL / BRAIN_INDEX_LABEL).",
    )
    pod_name_pattern: str = Field(
        r"^(?P<job>.+)-edljob-(?P<role>[a-z]+)-(?P<index>\d+)$",
        description="Regex with named groups job, role, index matched against the pod name "
        "(default: DLRover's <job>-edljob-<role>-<index>); must also be valid RE2.",
    )
    job_label: str = Field(
        "label_elasticjob_dlrover_name",
        description="labels mapping: the label holding the job uid or name (kube_pod_labels).",
    )
    role_label: str = Field(
        "label_elasticjob_dlrover_replica_type",
        description="labels mapping: the label holding the role (else taken from the pod name).",
    )
    index_label: str = Field(
        "label_elasticjob_dlrover_replica_index",
        description="labels mapping: the label holding the index (else taken from the pod name).",
    )
    prometheus_queries: dict[str, str] = Field(
        default_factory=dict,
        description="PromQL template overrides by signal (cpu, memory_mib, gpu_util, "
        "gpu_memory_mib, gpu_memory_total_mib, oom, node_free_cpu, node_free_memory_mib, "
        "node_free_gpu, pending_pods, pending_cpu, pending_memory_mib, pending_gpu, "
        "pod_labels); JSON.",
    )
    prometheus_selector: str = Field(
        "", description='Extra label matchers added to every pod query, e.g. cluster="prod".'
    )
    prometheus_step_time: str = Field(
        "",
        description="Per-pod training progress read as node samples' step_time_s (mean "
        "seconds of one mini-batch, for slow-node detection): a metric name, read as "
        "`avg by (namespace, pod) (<metric>{<selector>})`, or a PromQL template with the "
        "placeholders of BRAIN_PROMETHEUS_QUERIES returning seconds per pod; empty (the "
        "default) reads none.",
    )
    prometheus_rate_window: str = Field(
        "2m", description="Range of rate() in the CPU query (at least 4 scrape intervals)."
    )
    prometheus_step_s: int = Field(
        15, ge=1, description="Resolution (query_range step) of the collected series, seconds."
    )
    prometheus_timeout_s: float = Field(
        10, gt=0, description="Timeout of one request to Prometheus, seconds."
    )
    prometheus_retries: int = Field(
        2, ge=0, le=10, description="Retries of a failed Prometheus request (bounded)."
    )
    prometheus_backoff_s: float = Field(
        1.0, ge=0, description="Delay before the first retry; doubles with each retry (max 30 s)."
    )
    discovery: bool = Field(
        True,
        description="Discover every training job from kube-state-metrics each collector "
        "cycle (on whenever BRAIN_PROMETHEUS_URL is set; false turns it off).",
    )
    discovery_user_label: str = Field(
        "",
        description="Pod label naming a discovered job's user (e.g. team); empty: the "
        "job's namespace.",
    )
    discovery_group_label: str = Field(
        "",
        description="Pod label naming a discovered job's recurring group; empty: the job "
        "name without its run suffix (ctr-train-20261120 -> ctr-train).",
    )
    discovery_batch_selector: str = Field(
        "",
        description="Label selector (team=ml,tier!=test) of the plain batch Jobs that are "
        "training jobs; empty: none are.",
    )
    discovery_backfill: str = Field(
        "7d",
        description="How far back `brain serve` discovers jobs and reads their history on "
        "its first start (90m, 7d, 2w); 0 turns it off.",
    )
    discovery_history_step_s: int = Field(
        300,
        ge=15,
        le=3600,
        description="Step of history read by a backfill, seconds: each point keeps the "
        "step's mean CPU and GPU use and its peak memory.",
    )
    discovery_chunk_s: int = Field(
        21600,
        ge=300,
        le=7 * 86400,
        description="A backfill reads history in windows this long (seconds), each "
        "discovered, read and written before the next.",
    )

    @field_validator("discovery_backfill")
    @classmethod
    def _backfill_duration(cls, value: str) -> str:
        if duration_s(value) < 0:
            raise ValueError("discovery_backfill must not be negative")
        return value

    @property
    def discovery_backfill_s(self) -> float:
        return duration_s(self.discovery_backfill)


class PrioritySettings(BaseSettings):
    """Thresholds of the priority from utilization (GET /api/v1/priorities; see
    brain/portraits/priorities.py for the score). Flat ``BRAIN_PRIORITY_*`` variables;
    ``Settings.priority`` holds them."""

    model_config = SettingsConfigDict(env_prefix="BRAIN_", extra="ignore")

    priority_min_jobs: int = Field(
        3, ge=1, le=100_000, description="Owners with fewer jobs in the window are not judged."
    )
    priority_low_below: float = Field(
        0.3, ge=0, le=1, description="A score below this suggests the `low` priority class."
    )
    priority_high_from: float = Field(
        0.6, ge=0, le=1, description="A score at or above this suggests the `high` class."
    )
    priority_oom_weight: float = Field(
        0.5, ge=0, le=1, description="Score lost per OOM kill per job (OOM rate capped at 1)."
    )

    @model_validator(mode="after")
    def _ordered(self) -> PrioritySettings:
        if self.priority_low_below > self.priority_high_from:
            raise ValueError("priority_low_below must not exceed priority_high_from")
        return self


class ClusterSettings(BaseSettings):
    """How the running stage reads the cluster's state (GET/POST /api/v1/cluster/state):
    which state is fresh enough, and when the cluster counts as short. One policy for
    every job, so all jobs rank each other alike. Flat ``BRAIN_CLUSTER_*`` variables;
    ``Settings.cluster`` holds them."""

    model_config = SettingsConfigDict(env_prefix="BRAIN_", extra="ignore")

    cluster_state_max_age_s: float = Field(
        900,
        gt=0,
        le=7 * 86400,
        description="A cluster state older than this many seconds (on the job's clock) is "
        "not used: plans are then not bounded by the cluster.",
    )
    cluster_short_cpu: float = Field(
        0,
        ge=0,
        le=bounds.CEILING_CPU * bounds.CEILING_NODES,
        description="The cluster is short of CPU when pending pods request more than this "
        "many cores beyond the free ones.",
    )
    cluster_short_memory_mib: float = Field(
        0,
        ge=0,
        le=bounds.CEILING_MEMORY_MIB * bounds.CEILING_NODES,
        description="...of memory when they request more than this many MiB beyond the free.",
    )
    cluster_short_gpu: float = Field(
        0,
        ge=0,
        le=bounds.CEILING_GPU * bounds.CEILING_NODES,
        description="...of GPUs when they request more than this many beyond the free ones.",
    )

    @property
    def short_margin(self) -> Resources:
        return Resources(
            cpu=self.cluster_short_cpu,
            memory_mib=self.cluster_short_memory_mib,
            gpu=self.cluster_short_gpu,
        )


# Beyond this many default workers, each with its own connection pool, PostgreSQL's
# connections run out sooner than requests get faster (the database is then the limit).
MAX_DEFAULT_WORKERS = 4
# The API's pooled connections on one machine, shared among its worker processes: one
# process alone keeps as many as AnyIO has threads (40). Each worker keeps at least
# POOL_SIZE_MIN, so 4 workers hold 4 x 10 (+ 10 overflow each) of PostgreSQL's default
# max_connections of 100, not 4 x 50.
POOL_SIZE_PER_MACHINE = 40
POOL_SIZE_MIN = 10


class AuthMode(StrEnum):
    """``BRAIN_AUTH``: when callers need an API token."""

    auto = "auto"  # required, except on loopback while no token exists
    required = "required"  # required, even on loopback
    disabled = "disabled"  # never (explicitly chosen)


class MetricsTenants(StrEnum):
    """``BRAIN_METRICS_TENANT_SERIES``: who reads the per-tenant series on /metrics."""

    public = "public"  # any caller of /metrics, with or without a token
    token = "token"  # a caller's token: its namespaces' series (every namespace's: all)
    none = "none"  # nobody: /metrics shows the service's own metrics only


class Settings(BaseSettings):
    """Brain's effective configuration. Every field is ``BRAIN_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="BRAIN_", extra="ignore")

    database_url: str = Field(
        default_factory=default_database_url,
        description="SQLAlchemy URL; PostgreSQL as postgresql+psycopg://user:pass@host/db. "
        "The default is SQLite in the user's data directory, whatever the current "
        "directory (`brain config` prints it).",
        json_schema_extra={"shown_default": SHOWN_DEFAULT_URL},
    )
    host: str = Field("127.0.0.1", description="Address `brain serve` listens on.")
    port: int = Field(8080, ge=1, le=65535, description="Port `brain serve` listens on.")
    log_level: str = Field("info", description="debug, info, warning or error.")
    keep_alive_s: int = Field(
        75,
        ge=1,
        le=3600,
        description="Seconds an idle HTTP connection is kept open. Longer than a job "
        "master's push interval (15 s), so its next request does not race the server "
        "closing the connection (uvicorn's own default is 5 s).",
    )

    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Worker processes of `brain serve` (each answers requests; one of "
        "them also runs the background work). Unset: the CPUs the process may use (its "
        "CPU affinity and its container's CPU quota), at most "
        f"{MAX_DEFAULT_WORKERS}, on PostgreSQL; always 1 on SQLite, which takes one writer "
        "at a time.",
    )
    worker_healthcheck_s: float = Field(
        30,
        ge=1,
        le=600,
        description="With several worker processes: seconds a worker may take to answer "
        "`brain serve`'s health check before it counts as hung and is restarted. It is "
        "also about how long a worker that fails at start (a gRPC port taken, a broken "
        "database URL) can take to be noticed and make `brain serve` exit. uvicorn's own "
        "default of 5 s restarted workers that were merely starting on a busy machine.",
    )

    grpc_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Also serve DLRover's gRPC `brain.Brain` service on this port (DLRover's "
        "default is 50001); unset serves REST only.",
    )
    grpc_auth: bool = Field(
        True,
        description="Apply the API's token rules (BRAIN_AUTH) to gRPC calls, token as "
        "`authorization: Bearer` metadata. DLRover 0.6.1 masters send no metadata: false "
        "serves them without a token (keep the gRPC port network-restricted).",
    )
    grpc_workers: int = Field(
        64,
        ge=2,
        le=1024,
        description="Threads answering gRPC calls concurrently. Most of them only wait (an "
        "optimize call for its computation), so that a burst of optimize calls never keeps "
        "persist_metrics waiting and each call's deadline counts from its arrival.",
    )
    grpc_report_max_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=4 * 1024 * 1024,
        description="Largest job-master report (persist_metrics) Brain keeps, in bytes as "
        "sent; also the most a job's cumulative customized_data may grow to. Larger ones "
        "are answered and dropped (logged, counted as outcome `invalid`).",
    )
    grpc_optimize_workers: int = Field(
        8,
        ge=1,
        le=64,
        description="DLRover optimize computations running at once (each holds a database "
        "connection); more calls wait for one, within their deadline.",
    )
    grpc_optimize_timeout_s: float = Field(
        1.0,
        gt=0,
        le=30,
        description="A DLRover optimize call not answered within this many seconds gets no "
        "plan (the master calls without a deadline and blocks meanwhile).",
    )

    k8s_lookup: bool = Field(
        False,
        description="When a DLRover master asks for a create plan of a job Brain has no "
        "registration for, read the job's request from its ElasticJob through the Kubernetes "
        "API (needs the `k8s` extra and permission to list elasticjobs).",
    )
    k8s_kubeconfig: str | None = Field(
        None,
        description="Kubeconfig file for the ElasticJob lookup; unset: the pod's service "
        "account inside a cluster, else $KUBECONFIG or ~/.kube/config.",
    )
    k8s_namespace: str | None = Field(
        None,
        description="Look ElasticJobs up in this namespace only; unset: every namespace "
        "(a cluster-wide list permission).",
    )

    auth: AuthMode = Field(
        AuthMode.auto,
        description="auto: bearer tokens required, except on a loopback address while no token "
        "exists (and `brain serve` elsewhere refuses to start without one); required: always; "
        "disabled: no authentication.",
    )
    auth_public_paths: list[str] = Field(
        default_factory=lambda: ["/healthz", "/readyz", "/metrics"],
        description="Paths answered without a token (JSON list); /docs, /redoc and "
        "/openapi.json always are.",
    )
    bootstrap_token: SecretStr | None = Field(
        None,
        min_length=32,
        description="A first admin token's secret (at least 32 characters, e.g. from a "
        "Kubernetes Secret): `brain serve` stores it as the admin token named `bootstrap` "
        "before it starts, so a fresh server beyond loopback has a token. A changed value "
        "replaces that token's secret; a revoked bootstrap token stays revoked.",
    )
    token_cache_s: float = Field(
        10,
        ge=0,
        description="Seconds a token check may be reused while no token changed. A token "
        "created, rotated, revoked or deleted through Brain (API or `brain token`) is seen by "
        "every server process at its next request; this bounds how long a change made to the "
        "api_tokens table by hand goes unseen.",
    )
    max_body_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="Largest request body in bytes (413 before it is parsed).",
    )
    max_batch_points: int = Field(
        10_000, ge=1, description="Most points (node + speed) accepted in one samples batch."
    )
    clock_skew_s: float = Field(
        300, ge=0, description="How far in the future (seconds) a timestamp may lie."
    )
    plausible_cpu: float = Field(
        bounds.InputBounds.cpu,
        gt=0,
        le=bounds.CEILING_CPU,
        description="Largest CPU value (cores) accepted for one node's request or usage; a "
        "job's limit may reach this times `plausible_nodes`.",
    )
    plausible_memory_mib: float = Field(
        bounds.InputBounds.memory_mib,
        gt=0,
        le=bounds.CEILING_MEMORY_MIB,
        description="Largest memory value (MiB) accepted for one node (also GPU memory).",
    )
    plausible_gpu: float = Field(
        bounds.InputBounds.gpu,
        gt=0,
        le=bounds.CEILING_GPU,
        description="Most GPUs accepted for one node.",
    )
    plausible_steps_per_sec: float = Field(
        bounds.InputBounds.steps_per_sec,
        gt=0,
        le=bounds.CEILING_STEPS_PER_SEC,
        description="Fastest training speed accepted, global steps per second.",
    )
    plausible_nodes: int = Field(
        bounds.InputBounds.nodes,
        ge=1,
        le=bounds.CEILING_NODES,
        description="Most nodes accepted in one role (`count`) or training (`workers`).",
    )
    min_timestamp: AwareDatetime = Field(
        bounds.DEFAULT_MIN_TIMESTAMP,
        description="Earliest timestamp accepted in any input (later than the clock plus "
        "`clock_skew_s` is rejected too).",
    )
    retention_days: int | None = Field(
        None,
        ge=1,
        description="Delete raw samples older than this many days from summarized jobs "
        "(`brain serve` each summary interval, or `brain retention`); unset keeps everything.",
    )

    node_max_cpu: float = Field(64, gt=0, description="Largest node: CPU cores.")
    node_max_memory_mib: float = Field(512 * 1024, gt=0, description="Largest node: MiB.")
    node_max_gpu: float = Field(8, ge=0, description="Largest node: GPUs.")

    default_job_cpu: float | None = Field(
        None,
        gt=0,
        description="CPU budget (cores) of a job registered without a CPU limit: every plan "
        "stays within it as within a limit. Unset: such a job is bounded only by its roles' "
        "max_count, the cluster's room and max_change_factor.",
    )
    max_change_factor: float | None = Field(
        8.0,
        ge=1.0,
        description="Most one plan multiplies or divides a role's count or per-node size by "
        "(OOM fixes and the estimate stage's workers and chief excepted), so that one bad "
        "measurement costs one bounded step; unset: no such bound.",
    )
    stage_optimizers: dict[Stage, list[str]] | None = Field(
        None,
        description="Which optimizers run for each stage (create, estimate, running, oom), "
        "in order (JSON in the environment); it replaces every default, so a stage left "
        "out runs none. Unset: each stage runs its default pipeline, the optimizers that "
        "declare a position there (`default_order` in GET /api/v1/optimizers).",
    )
    optimizer_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Per-optimizer settings overrides, e.g. {"hot_ps": {"hot_threshold": 0.85}}.',
    )
    summary_interval_s: float = Field(
        300,
        ge=0,
        description="Seconds between refreshes of stale and running jobs' summaries (and "
        "retention) inside `brain serve`; 0 disables (then run `brain summarize` and "
        "`brain retention` from cron).",
    )
    model_dir: str = Field(
        "./brain-models",
        description="Where `brain train` stores versioned learned-recommender models and "
        "`brain serve` loads the newest from.",
    )
    train_interval_s: float = Field(
        0,
        ge=0,
        description="Seconds between retrainings of the learned recommender inside `brain "
        "serve` (from the database's succeeded jobs; needs the backtest extra); 0 disables.",
    )
    history_window_days: int = Field(
        90, ge=1, description="How far back related jobs are searched for history."
    )
    history_jobs: int = Field(
        10,
        ge=1,
        le=500,
        description="Most related past jobs handed to the create stage (startup uses 5, "
        "gpu_cpu 3 by default), newest first; the newest as many of at least "
        "`history_min_run_s` come beside them.",
    )
    history_max_run_days: float = Field(
        bounds.DEFAULT_MAX_RUN_DAYS,
        gt=0,
        le=bounds.LONGEST_MAX_RUN_DAYS,
        description="Runs longer than this, or whose samples span longer, are not believed: "
        "left out of related history, portraits, rankings and priorities (their own "
        "portrait says why), so one implausible record cannot size plans or move priorities.",
    )
    history_across_namespaces: bool = Field(
        False,
        description="Pool related history and the cluster-shortage ranking across "
        "namespaces. Off: a job's create plan learns only from runs in its own namespace and "
        "gives workers back only among its namespace's jobs, so one tenant can neither read "
        "nor move another's plans. On: small namespaces borrow from others' runs (useful "
        "when one team's jobs run under several namespaces), and any namespace able to "
        "register jobs can move every other namespace's plans; evidence still names only "
        "jobs of the plan's own namespace.",
    )
    history_min_run_s: float = Field(
        1800,
        ge=0,
        description="Beside the newest `history_jobs` related runs, the create stage and "
        "suggestions get the newest `history_jobs` runs at least this long (seconds; gpu_cpu's "
        "min_duration_s by default), so newer short runs cannot hide the long ones.",
    )
    sample_window_s: int = Field(
        900, ge=60, description="Recent window of samples handed to the running-stage optimizers."
    )

    memory_peak_window_s: int = Field(
        86400,
        ge=600,
        description="Window over which each node's memory peak is handed to the running "
        "stage (`memory_release` lowers memory only when that peak stays low).",
    )

    speed_window_s: int = Field(
        3 * 3600,
        ge=60,
        description="Window of training-speed samples handed to the optimizers (worker tuning "
        "compares speed across worker counts).",
    )

    metrics_window_days: int = Field(
        7,
        ge=1,
        le=3650,
        description="/metrics shows waste, efficiency and OOM kills per namespace, user and "
        "group over the jobs that ended in this many days, and the plans created in them.",
    )
    metrics_owner_series: int = Field(
        100,
        ge=0,
        le=100_000,
        description="Users (and, separately, groups) of each namespace with series of their "
        "own on /metrics: those wasting most; the namespace's others add up in one "
        "`(other)` series.",
    )
    metrics_tenant_series: MetricsTenants = Field(
        MetricsTenants.public,
        description="Who reads the per-tenant series of /metrics (brain_namespace_*, "
        "brain_user_*, brain_group_*: names, resource-hours, efficiency): `public` any "
        "caller; `token` only a caller sending an API token (read scope), and of a token "
        "limited to namespaces only its namespaces' series; `none` nobody. The service's "
        "own metrics stay readable as /metrics itself is (BRAIN_AUTH_PUBLIC_PATHS).",
    )
    metrics_cache_s: float = Field(
        15,
        ge=0,
        le=3600,
        description="Seconds a worker reuses the portrait metrics it read from the database "
        "for /metrics (every worker reads the same database, so any one answers for all).",
    )

    price_defaults: bool = Field(
        True,
        description="Price what no BRAIN_PRICE_* sets at the default table (Google Cloud's "
        "on-demand list prices in us-central1, see docs/configuration.md); false: only the "
        "prices set here count, and with none set Brain shows hours, no dollars.",
    )
    price_core_hour_usd: float | None = Field(
        None,
        ge=0,
        description="Dollars per core-hour of CPU requested; unset: the default price "
        "($0.031611); empty: CPU is not priced.",
    )
    price_gib_hour_usd: float | None = Field(
        None,
        ge=0,
        description="Dollars per GiB-hour of memory requested; unset: the default price "
        "($0.004237); empty: memory is not priced.",
    )
    price_gpu_hour_usd: float | None = Field(
        None,
        ge=0,
        description="Dollars per GPU-hour for GPU types not in BRAIN_PRICE_GPU_HOUR_USD_BY_TYPE "
        "(and jobs without a type); unset or empty: those GPUs are not priced.",
    )
    price_gpu_hour_usd_by_type: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict,
        description='Dollars per GPU-hour by GPU type (any case), a JSON object: {"a100": 2.9, '
        '"t4": 0.35}; it replaces the default table (a100, t4, v100); {}: no type priced.',
    )

    @field_validator(
        "price_core_hour_usd", "price_gib_hour_usd", "price_gpu_hour_usd", mode="before"
    )
    @classmethod
    def _empty_price_is_unpriced(cls, value: Any) -> Any:
        # BRAIN_PRICE_CORE_HOUR_USD= (set, empty) turns that resource's default price off.
        return None if isinstance(value, str) and value.strip() == "" else value

    collector: CollectorSettings = Field(
        default_factory=CollectorSettings,
        description="The Prometheus collector's settings (flat BRAIN_PROMETHEUS_* and "
        "BRAIN_COLLECT_* variables, see CollectorSettings).",
    )

    cluster: ClusterSettings = Field(
        default_factory=ClusterSettings,
        description="How the running stage uses the cluster's state (flat BRAIN_CLUSTER_* "
        "variables, see ClusterSettings).",
    )

    priority: PrioritySettings = Field(
        default_factory=PrioritySettings,
        description="Thresholds of the priority from utilization (flat BRAIN_PRIORITY_* "
        "variables, see PrioritySettings).",
    )

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def serve_workers(self) -> int:
        """How many worker processes ``brain serve`` runs (``workers`` or its default)."""
        if self.workers is not None:
            return self.workers
        if self.is_sqlite:
            return 1
        return min(usable_cpus(), MAX_DEFAULT_WORKERS)

    @property
    def pool_size(self) -> int:
        """Connections each API process keeps open (``POOL_SIZE_PER_MACHINE`` shared)."""
        return max(POOL_SIZE_PER_MACHINE // self.serve_workers, POOL_SIZE_MIN)

    @property
    def input_bounds(self) -> bounds.InputBounds:
        return bounds.InputBounds(
            cpu=self.plausible_cpu,
            memory_mib=self.plausible_memory_mib,
            gpu=self.plausible_gpu,
            steps_per_sec=self.plausible_steps_per_sec,
            nodes=self.plausible_nodes,
            min_timestamp=self.min_timestamp,
        )

    @property
    def node_max(self) -> Resources:
        return Resources(
            cpu=self.node_max_cpu, memory_mib=self.node_max_memory_mib, gpu=self.node_max_gpu
        )

    @property
    def prices(self) -> Prices:
        """The prices in effect: each set BRAIN_PRICE_* (even empty), else its default
        (unless BRAIN_PRICE_DEFAULTS=false)."""

        def chosen(name: str, default: Any) -> tuple[Any, bool]:
            if name in self.model_fields_set or not self.price_defaults:
                return getattr(self, name), False
            return default, True

        core, core_default = chosen("price_core_hour_usd", DEFAULT_CORE_HOUR_USD)
        gib, gib_default = chosen("price_gib_hour_usd", DEFAULT_GIB_HOUR_USD)
        by_type, gpu_default = chosen(
            "price_gpu_hour_usd_by_type", dict(DEFAULT_GPU_HOUR_USD_BY_TYPE)
        )
        defaults = {"cpu": core_default, "memory": gib_default, "gpu": gpu_default}
        return Prices(
            core_hour_usd=core,
            gib_hour_usd=gib,
            gpu_hour_usd=self.price_gpu_hour_usd,
            gpu_hour_usd_by_type=tuple(sorted(by_type.items())),
            defaults=frozenset(r for r, is_default in defaults.items() if is_default),
        )

    def price_origins(self) -> dict[str, dict[str, Any]]:
        """Each price in effect and where it came from, as `brain config` shows them."""
        prices = self.prices
        default = f"default ({DEFAULT_PRICE_SOURCE})"

        def origin(name: str, resource: str | None) -> str:
            variable = f"BRAIN_{name.upper()}"
            if resource in prices.defaults:
                return default
            if name not in self.model_fields_set:
                # Unset and not at a default: GPUs of no listed type have none to fall to.
                why = "no default" if resource is None else "BRAIN_PRICE_DEFAULTS=false"
                return f"not priced ({why})"
            if getattr(self, name) is None:
                return f"not priced ({variable} empty)"
            return variable

        return {
            "core_hour_usd": {
                "usd": prices.core_hour_usd,
                "from": origin("price_core_hour_usd", "cpu"),
            },
            "gib_hour_usd": {
                "usd": prices.gib_hour_usd,
                "from": origin("price_gib_hour_usd", "memory"),
            },
            "gpu_hour_usd": {
                "usd": prices.gpu_hour_usd,
                "from": origin("price_gpu_hour_usd", None),
            },
            "gpu_hour_usd_by_type": {
                "usd": dict(prices.gpu_hour_usd_by_type),
                "from": origin("price_gpu_hour_usd_by_type", "gpu"),
            },
        }

    def masked(self) -> dict[str, Any]:
        """The configuration as plain data with every secret replaced by ``***``, flat as
        the environment names it (the collector's fields beside the others)."""
        data = _masked(self, exclude={"collector", "priority", "cluster"})
        data["database_url"] = make_url(self.database_url).render_as_string(hide_password=True)
        data.update(_masked(self.collector))
        data.update(_masked(self.priority))
        data.update(_masked(self.cluster))
        return data


# Where Linux shows the process's control groups (a container sees its own at the root).
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")


def usable_cpus() -> int:
    """The CPUs this process may use: its affinity mask (a container's cpuset, a
    `taskset`) and its control group's CPU quota (a Kubernetes CPU limit), in whole
    cores and at least one, not every CPU of the host."""
    cpus = os.cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    quota = cpu_quota_cores(CGROUP_ROOT, PROC_SELF_CGROUP)
    if quota is not None:
        # Whole cores: a worker beyond the quota would only be throttled with the others.
        cpus = min(cpus, max(1, math.floor(quota)))
    return cpus


def cpu_quota_cores(cgroup_root: Path, proc_cgroup: Path) -> float | None:
    """The tightest CPU quota, in cores, on the process's control group and its
    ancestors (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us`` over
    ``cpu.cfs_period_us``); None without a quota or where nothing can be read."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return None
    quotas: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one unified hierarchy
            quotas += _along(cgroup_root, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            for mount in (controllers, "cpu", "cpu,cpuacct"):
                found = _along(cgroup_root / mount, path, _v1_quota)
                if found:
                    quotas += found
                    break
    return min(quotas, default=None)


def _along(root: Path, path: str, read) -> list[float]:
    """``read`` of the group at ``path`` under ``root`` and of each ancestor up to
    ``root`` itself (where a container with its own cgroup namespace finds its limit)."""
    found = []
    directory = root / path.strip("/")
    while True:
        quota = read(directory)
        if quota is not None:
            found.append(quota)
        if directory == root or root not in directory.parents:
            return found
        directory = directory.parent


def _v2_quota(directory: Path) -> float | None:
    try:
        quota, period = (directory / "cpu.max").read_text().split()
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def _v1_quota(directory: Path) -> float | None:
    try:
        quota = int((directory / "cpu.cfs_quota_us").read_text())
        period = int((directory / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def _masked(settings: BaseSettings, exclude: set[str] | None = None) -> dict[str, Any]:
    data = settings.model_dump(mode="json", exclude=exclude)  # timestamps as RFC 3339
    for name, value in data.items():
        if isinstance(getattr(settings, name), SecretStr) and value is not None:
            data[name] = "***"
    return data
