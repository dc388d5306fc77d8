"""Job summaries: per job, role and node, with the indexes history and portraits use.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 09:24:32.146124
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _time(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, brain.db.types.UTCDateTime(timezone=True), nullable=nullable)


def _usage_columns() -> list[sa.Column]:
    """UsageStatsColumns: mean, p50, p95 and max of each metric."""
    columns = [sa.Column("samples", sa.Integer(), nullable=False)]
    for pattern in ("cpu_{}_cores", "memory_{}_mib", "gpu_util_{}", "gpu_memory_{}_mib"):
        for stat in ("mean", "p50", "p95", "max"):
            columns.append(sa.Column(pattern.format(stat), sa.Double(), nullable=True))
    columns.append(sa.Column("gpu_memory_total_mib", sa.Double(), nullable=True))
    return columns


def _hours_columns() -> list[sa.Column]:
    """ResourceHoursColumns: requested and used resource-hours, OOMs and failures."""
    columns = [
        sa.Column(f"{kind}_{unit}_hours", sa.Double(), nullable=False)
        for unit in ("core", "gib", "gpu")
        for kind in ("requested", "used")
    ]
    columns.append(sa.Column("oom_count", sa.Integer(), nullable=False))
    columns.append(sa.Column("failure_count", sa.Integer(), nullable=False))
    return columns


def _requests() -> list[sa.Column]:
    return [
        sa.Column("cpu_request_cores", sa.Double(), nullable=False),
        sa.Column("memory_request_mib", sa.Double(), nullable=False),
        sa.Column("gpu_request", sa.Double(), nullable=False),
    ]


def _job_summary_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["job_id"],
        ["job_summaries.job_id"],
        name=op.f(f"fk_{table}_job_id_job_summaries"),
        ondelete="CASCADE",
    )


JOB_SUMMARY_INDEXES = (
    ("user_name", "ended_at"),
    ("user_name", "dataset", "ended_at"),
    ("group_key", "ended_at"),
    ("name", "ended_at"),
    ("ended_at",),
)


def upgrade() -> None:
    op.create_table(
        "job_summaries",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        _time("computed_at", nullable=False),
        sa.Column("uid", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("dataset", sa.String(length=253), nullable=True),
        sa.Column("group_key", sa.String(length=400), nullable=False),
        sa.Column("gpu_type", sa.String(length=128), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        _time("started_at", nullable=True),
        _time("ended_at", nullable=False),
        sa.Column("run_seconds", sa.Double(), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("samples", sa.BigInteger(), nullable=False),
        sa.Column("speed_mean_steps_per_s", sa.Double(), nullable=True),
        sa.Column("speed_per_worker_mean_steps_per_s", sa.Double(), nullable=True),
        sa.Column("plans", sa.JSON(), nullable=False),
        _time("series_start", nullable=True),
        sa.Column("series_bucket_seconds", sa.Double(), nullable=True),
        sa.Column("series_buckets", sa.Integer(), nullable=False),
        sa.Column("speed_series", sa.LargeBinary(), nullable=True),
        *_hours_columns(),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_job_summaries_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_job_summaries")),
    )
    for columns in JOB_SUMMARY_INDEXES:
        name = op.f(f"ix_job_summaries_{'_'.join(columns)}")
        op.create_index(name, "job_summaries", list(columns), unique=False)
    op.create_table(
        "role_summaries",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=64), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        *_requests(),
        sa.Column("usage_series", sa.LargeBinary(), nullable=True),
        *_usage_columns(),
        *_hours_columns(),
        _job_summary_fk("role_summaries"),
        sa.PrimaryKeyConstraint("job_id", "role", name=op.f("pk_role_summaries")),
    )
    op.create_table(
        "node_summaries",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("role", sa.String(length=64), nullable=False),
        *_requests(),
        _time("first_sample_at", nullable=True),
        _time("last_sample_at", nullable=True),
        sa.Column("run_seconds", sa.Double(), nullable=False),
        sa.Column("sampled_seconds", sa.Double(), nullable=False),
        *_usage_columns(),
        *_hours_columns(),
        _job_summary_fk("node_summaries"),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
            name=op.f("fk_node_summaries_node_id_nodes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "node_id", name=op.f("pk_node_summaries")),
    )
    op.create_index(op.f("ix_node_summaries_node_id"), "node_summaries", ["node_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_node_summaries_node_id"), table_name="node_summaries")
    op.drop_table("node_summaries")
    op.drop_table("role_summaries")
    for columns in JOB_SUMMARY_INDEXES:
        op.drop_index(op.f(f"ix_job_summaries_{'_'.join(columns)}"), table_name="job_summaries")
    op.drop_table("job_summaries")
