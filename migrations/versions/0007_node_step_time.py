"""Node samples carry the node's mean mini-batch time (slow-node detection).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 20:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("node_samples", sa.Column("step_time_s", sa.Double(), nullable=True))


def downgrade() -> None:
    op.drop_column("node_samples", "step_time_s")
