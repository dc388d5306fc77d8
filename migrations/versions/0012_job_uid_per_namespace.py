"""Job uids are unique per namespace, not across namespaces.

Two namespaces may each register a job ``same-uid``: a uid no longer tells one
namespace that another holds it, and no namespace can take a uid before another.
Jobs without a namespace form one namespace of their own (a partial unique index: a
plain unique constraint would let any number of them share a uid, since NULLs differ).
The constraint leads with ``uid``, so it also serves the lookups by uid alone.

Downgrading restores global uids, and fails while a uid is held in two namespaces.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WITHOUT_NAMESPACE = sa.text("namespace IS NULL")


def upgrade() -> None:
    # On SQLite the batch rebuilds the table (env.py turns foreign keys off meanwhile).
    with op.batch_alter_table("jobs") as batch:
        batch.drop_constraint("uq_jobs_uid", type_="unique")
        batch.create_unique_constraint("uq_jobs_uid_namespace", ["uid", "namespace"])
    op.create_index(
        "uq_jobs_uid_without_namespace",
        "jobs",
        ["uid"],
        unique=True,
        postgresql_where=WITHOUT_NAMESPACE,
        sqlite_where=WITHOUT_NAMESPACE,
    )


def downgrade() -> None:
    op.drop_index("uq_jobs_uid_without_namespace", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_constraint("uq_jobs_uid_namespace", type_="unique")
        batch.create_unique_constraint("uq_jobs_uid", ["uid"])
