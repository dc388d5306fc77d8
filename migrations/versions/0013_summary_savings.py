"""The savings report's replayed figures on each final job summary, so that the report
sums stored rows instead of replaying every job per request.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOURS = (
    "node_hours",
    "requested_core_hours",
    "used_core_hours",
    "brain_core_hours",
    "requested_gib_hours",
    "used_gib_hours",
    "brain_gib_hours",
    "requested_gpu_hours",
    "used_gpu_hours",
    "brain_gpu_hours",
    "replayed_node_hours",
)


def upgrade() -> None:
    # Existing summaries read as not replayed yet: the summary refresher fills them in.
    op.add_column(
        "job_summaries",
        sa.Column("savings_computed_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
    )
    for name in HOURS:
        op.add_column("job_summaries", sa.Column(f"savings_{name}", sa.Double(), nullable=True))
    op.add_column("job_summaries", sa.Column("savings_brain_ooms", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("job_summaries", "savings_brain_ooms")
    for name in reversed(HOURS):
        op.drop_column("job_summaries", f"savings_{name}")
    op.drop_column("job_summaries", "savings_computed_at")
