"""scale_plans.applied_at: when the job master applied a plan (cooldowns count from it).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 19:05:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "scale_plans",
        sa.Column("applied_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_column("scale_plans", "applied_at")
