"""Configuration from ``BRAIN_*`` environment variables.

Nothing here is built at import time: callers create ``Settings()`` when they start.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from brain.domain import Resources

DEFAULT_STAGE_OPTIMIZERS: dict[str, list[str]] = {
    "create": ["startup", "gpu_cpu"],
    "oom": ["oom_recovery"],
    "estimate": ["estimate"],
    "running": ["hot_ps", "oom_risk", "worker_tuning"],
}


class Settings(BaseSettings):
    """Brain's effective configuration. Every field is ``BRAIN_<FIELD>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="BRAIN_", extra="ignore")

    database_url: str = Field(
        "sqlite:///./brain.db",
        description="SQLAlchemy URL; PostgreSQL as postgresql+psycopg://user:pass@host/db.",
    )
    host: str = Field("127.0.0.1", description="Address `brain serve` listens on.")
    port: int = Field(8080, ge=1, le=65535, description="Port `brain serve` listens on.")
    log_level: str = Field("info", description="debug, info, warning or error.")

    max_batch_points: int = Field(
        10_000, ge=1, description="Most points (node + speed) accepted in one samples batch."
    )
    clock_skew_s: float = Field(
        300, ge=0, description="How far in the future (seconds) a timestamp may lie."
    )
    retention_days: int | None = Field(
        None,
        ge=1,
        description="Delete raw samples older than this many days from summarized jobs; "
        "unset keeps everything.",
    )

    node_max_cpu: float = Field(64, gt=0, description="Largest node: CPU cores.")
    node_max_memory_mib: float = Field(512 * 1024, gt=0, description="Largest node: MiB.")
    node_max_gpu: float = Field(8, ge=0, description="Largest node: GPUs.")

    stage_optimizers: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_STAGE_OPTIMIZERS.items()},
        description="Which optimizers run for each stage (JSON in the environment).",
    )
    optimizer_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Per-optimizer settings overrides, e.g. {"hot_ps": {"threshold": 0.85}}.',
    )
    history_window_days: int = Field(
        90, ge=1, description="How far back related jobs are searched for history."
    )
    sample_window_s: int = Field(
        900, ge=60, description="Recent window of samples handed to the running-stage optimizers."
    )

    prometheus_url: str | None = Field(
        None, description="Prometheus to scrape node load from; unset disables the collector."
    )
    prometheus_token: SecretStr | None = Field(None, description="Bearer token for Prometheus.")
    prometheus_username: str | None = Field(None, description="Basic-auth user for Prometheus.")
    prometheus_password: SecretStr | None = Field(None, description="Basic-auth password.")
    prometheus_ca_file: str | None = Field(None, description="CA bundle for Prometheus TLS.")

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def node_max(self) -> Resources:
        return Resources(
            cpu=self.node_max_cpu, memory_mib=self.node_max_memory_mib, gpu=self.node_max_gpu
        )

    def masked(self) -> dict[str, Any]:
        """The configuration as plain data with every secret replaced by ``***``."""
        data = self.model_dump()
        data["database_url"] = make_url(self.database_url).render_as_string(hide_password=True)
        for name, value in data.items():
            if isinstance(getattr(self, name), SecretStr) and value is not None:
                data[name] = "***"
        return data
