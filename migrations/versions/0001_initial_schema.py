"""Initial schema: jobs, nodes, node and speed samples, events, scale plans.

Revision ID: 0001
Revises:
Create Date: 2026-11-21 09:20:45.234865
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uid", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("dataset", sa.String(length=253), nullable=True),
        sa.Column("group_key", sa.String(length=400), nullable=False),
        sa.Column("framework", sa.String(length=64), nullable=True),
        sa.Column("strategy", sa.String(length=16), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=True),
        sa.Column("cluster", sa.String(length=253), nullable=True),
        sa.Column("gpu_type", sa.String(length=128), nullable=True),
        sa.Column("limit_cpu", sa.Double(), nullable=True),
        sa.Column("limit_memory_mib", sa.Double(), nullable=True),
        sa.Column("limit_gpu", sa.Double(), nullable=True),
        sa.Column("roles", sa.JSON(), nullable=False),
        sa.Column("total_steps", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("exit_reason", sa.Text(), nullable=True),
        sa.Column("created_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("started_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("summarized_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("uid", name=op.f("uq_jobs_uid")),
    )
    op.create_index(op.f("ix_jobs_created_at_id"), "jobs", ["created_at", "id"], unique=False)
    op.create_index(op.f("ix_jobs_dataset"), "jobs", ["dataset"], unique=False)
    op.create_index(
        op.f("ix_jobs_group_key_status_finished_at"),
        "jobs",
        ["group_key", "status", "finished_at"],
        unique=False,
    )
    op.create_index(op.f("ix_jobs_status"), "jobs", ["status"], unique=False)
    op.create_index(
        op.f("ix_jobs_user_name_created_at"), "jobs", ["user_name", "created_at"], unique=False
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("role", sa.String(length=64), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("cpu", sa.Double(), nullable=False),
        sa.Column("memory_mib", sa.Double(), nullable=False),
        sa.Column("gpu", sa.Double(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("created_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_nodes_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nodes")),
        sa.UniqueConstraint("job_id", "name", name=op.f("uq_nodes_job_id_name")),
    )
    op.create_table(
        "speed_samples",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("ts", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("global_step", sa.BigInteger(), nullable=False),
        sa.Column("steps_per_sec", sa.Double(), nullable=False),
        sa.Column("workers", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_speed_samples_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", "ts", name=op.f("pk_speed_samples")),
    )
    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=True),
        sa.Column("node_name", sa.String(length=253), nullable=False),
        sa.Column("ts", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_events_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["node_id"], ["nodes.id"], name=op.f("fk_events_node_id_nodes"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
        sa.UniqueConstraint(
            "job_id", "kind", "ts", "node_name", name=op.f("uq_events_job_id_kind_ts_node_name")
        ),
    )
    op.create_table(
        "node_samples",
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("ts", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("cpu", sa.Double(), nullable=False),
        sa.Column("memory_mib", sa.Double(), nullable=False),
        sa.Column("gpu_util", sa.Double(), nullable=True),
        sa.Column("gpu_memory_mib", sa.Double(), nullable=True),
        sa.Column("gpu_memory_total_mib", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_node_samples_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
            name=op.f("fk_node_samples_node_id_nodes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("node_id", "ts", name=op.f("pk_node_samples")),
    )
    op.create_index(
        op.f("ix_node_samples_job_id_ts"), "node_samples", ["job_id", "ts"], unique=False
    )
    op.create_table(
        "scale_plans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("source_event_id", sa.Integer(), nullable=True),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column("created_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_scale_plans_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["source_event_id"],
            ["events.id"],
            name=op.f("fk_scale_plans_source_event_id_events"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scale_plans")),
        sa.UniqueConstraint("source_event_id", name=op.f("uq_scale_plans_source_event_id")),
    )
    op.create_index(op.f("ix_scale_plans_job_id_id"), "scale_plans", ["job_id", "id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_scale_plans_job_id_id"), table_name="scale_plans")
    op.drop_table("scale_plans")
    op.drop_index(op.f("ix_node_samples_job_id_ts"), table_name="node_samples")
    op.drop_table("node_samples")
    op.drop_table("events")
    op.drop_table("speed_samples")
    op.drop_table("nodes")
    op.drop_index(op.f("ix_jobs_user_name_created_at"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_status"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_group_key_status_finished_at"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_dataset"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_created_at_id"), table_name="jobs")
    op.drop_table("jobs")
