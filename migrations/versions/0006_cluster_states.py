"""Cluster state: the newest free capacity and pending demand of each source.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 19:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cluster_states",
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("ts", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("nodes", sa.Integer(), nullable=False),
        sa.Column("free_cpu", sa.Double(), nullable=True),
        sa.Column("free_memory_mib", sa.Double(), nullable=True),
        sa.Column("free_gpu", sa.Double(), nullable=True),
        sa.Column("pending_pods", sa.Integer(), nullable=True),
        sa.Column("pending_cpu", sa.Double(), nullable=True),
        sa.Column("pending_memory_mib", sa.Double(), nullable=True),
        sa.Column("pending_gpu", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("source", name=op.f("pk_cluster_states")),
    )


def downgrade() -> None:
    op.drop_table("cluster_states")
