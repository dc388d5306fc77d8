"""Whether Brain learned a node from samples (``nodes.learned``) rather than a master
registering it: a learned node whose samples stopped counts as gone.

Nodes stored before read as registered: Brain cannot tell which of them a master
registered, and a registered node keeps the status its master gave it, so an upgrade
changes nothing for the nodes of jobs already running.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "nodes", sa.Column("learned", sa.Boolean(), nullable=False, server_default=sa.false())
    )


def downgrade() -> None:
    op.drop_column("nodes", "learned")
