"""Jobs found by discovery: their Kubernetes kind, and whether only the cluster's metrics
know them (no job master registered them).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every job stored so far was registered: not discovered, no kind.
    op.add_column("jobs", sa.Column("kind", sa.String(length=64), nullable=True))
    op.add_column(
        "jobs",
        sa.Column("discovered", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    op.drop_column("jobs", "discovered")
    op.drop_column("jobs", "kind")
