"""A partial index on jobs without a final summary.

Every suggestion and create stage looks for related succeeded jobs whose summary is not
written yet; without this index the name rule scanned every job (7 ms at 2,000 jobs).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23 23:35:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UNSUMMARIZED = sa.text("summarized_at IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_jobs_unsummarized",
        "jobs",
        ["id"],
        postgresql_where=UNSUMMARIZED,
        sqlite_where=UNSUMMARIZED,
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_unsummarized", table_name="jobs")
