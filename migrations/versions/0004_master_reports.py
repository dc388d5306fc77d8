"""What job masters report beyond samples (DLRover's persist_metrics): one row per kind.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 19:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "master_reports",
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("updated_at", brain.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_master_reports_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "kind", name=op.f("pk_master_reports")),
    )


def downgrade() -> None:
    op.drop_table("master_reports")
