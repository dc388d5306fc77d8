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
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from brain.db.types import UTCDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON()}


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index(None, "user_name", "created_at"),
        Index(None, "group_key", "status", "finished_at"),
        Index(None, "dataset"),
        Index(None, "status"),
        Index(None, "created_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uid: Mapped[str] = mapped_column(String(253), unique=True)
    name: Mapped[str] = mapped_column(String(253))
    # "user" is reserved in PostgreSQL, hence the column name.
    user: Mapped[str] = mapped_column("user_name", String(128))
    dataset: Mapped[str | None] = mapped_column(String(253))
    group_key: Mapped[str] = mapped_column(String(400))
    framework: Mapped[str | None] = mapped_column(String(64))
    strategy: Mapped[str] = mapped_column(String(16))
    namespace: Mapped[str | None] = mapped_column(String(253))
    cluster: Mapped[str | None] = mapped_column(String(253))
    gpu_type: Mapped[str | None] = mapped_column(String(128))
    limit_cpu: Mapped[float | None] = mapped_column(Double)
    limit_memory_mib: Mapped[float | None] = mapped_column(Double)
    limit_gpu: Mapped[float | None] = mapped_column(Double)
    # {"worker": {"count": 4, "cpu": 8, "memory_mib": 16384, "gpu": 1}, ...}
    roles: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    total_steps: Mapped[int | None] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    exit_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    # Set once a summary of the job is kept; raw samples may then be aged out.
    summarized_at: Mapped[datetime | None]


class Node(Base):
    __tablename__ = "nodes"
    __table_args__ = (UniqueConstraint("job_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(253))
    role: Mapped[str] = mapped_column(String(64))
    index: Mapped[int] = mapped_column(Integer)
    cpu: Mapped[float] = mapped_column(Double, default=0.0)
    memory_mib: Mapped[float] = mapped_column(Double, default=0.0)
    gpu: Mapped[float] = mapped_column(Double, default=0.0)
    status: Mapped[str] = mapped_column(String(32), default="running")
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class NodeSample(Base):
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


class SpeedSample(Base):
    __tablename__ = "speed_samples"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    ts: Mapped[datetime] = mapped_column(primary_key=True)
    global_step: Mapped[int] = mapped_column(BigInteger)
    steps_per_sec: Mapped[float] = mapped_column(Double)
    workers: Mapped[int] = mapped_column(Integer)


class Event(Base):
    __tablename__ = "events"
    # The natural key makes a retried event list idempotent.
    __table_args__ = (UniqueConstraint("job_id", "kind", "ts", "node_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    node_id: Mapped[int | None] = mapped_column(ForeignKey("nodes.id", ondelete="SET NULL"))
    # "" for job-level events; kept beside node_id so the unique key has no NULLs.
    node_name: Mapped[str] = mapped_column(String(253), default="")
    ts: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str | None] = mapped_column(Text)


class ScalePlan(Base):
    __tablename__ = "scale_plans"
    __table_args__ = (Index(None, "job_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    stage: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    # roles, launch, remove, migrate, ps_hosts, reasons, optimizers
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    # An event answered by this plan (OOM recovery); unique so no event is answered twice.
    source_event_id: Mapped[int | None] = mapped_column(
        ForeignKey("events.id", ondelete="SET NULL"), unique=True
    )
    status_message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]
