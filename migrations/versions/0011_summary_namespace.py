"""The job's namespace on its summary, so history and portraits stay within a namespace.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 18:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("job_summaries", sa.Column("namespace", sa.String(253), nullable=True))
    op.execute(
        "UPDATE job_summaries SET namespace = "
        "(SELECT jobs.namespace FROM jobs WHERE jobs.id = job_summaries.job_id)"
    )


def downgrade() -> None:
    op.drop_column("job_summaries", "namespace")
