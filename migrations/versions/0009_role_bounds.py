"""Jobs carry per-role node-count bounds (min_count, max_count) for elastic training.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23 22:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: jobs registered before this revision have no bounds (read as none).
    op.add_column("jobs", sa.Column("role_bounds", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "role_bounds")
