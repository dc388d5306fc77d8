"""Cluster states carry the number of queued jobs (pushed by platforms without Prometheus).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 22:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("cluster_states", sa.Column("queued_jobs", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("cluster_states", "queued_jobs")
