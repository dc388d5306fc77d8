"""When a caller that may write every namespace registered or reached a job by its
namespace (``jobs.vouched_at``): a bare uid held in several namespaces means that job.

Jobs stored before read as not vouched for: a bare uid they share stays ambiguous, as
it was, until an unrestricted caller or the job's master names one.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "jobs",
        sa.Column("vouched_at", brain.db.types.UTCDateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_column("jobs", "vouched_at")
