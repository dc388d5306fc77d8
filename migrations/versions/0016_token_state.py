"""Tokens as a whole: a version every change raises, and since when tokens have existed.

Every server process reads the one row at each token check: a token rotated, revoked or
deleted in one process (or by ``brain token``) is refused by all of them at their next
request, and a loopback server with ``BRAIN_AUTH=auto`` stays closed once a token has
existed. A database that holds tokens already is closed from its oldest token's
creation.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "token_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("closed_since", brain.db.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_token_state")),
    )
    op.execute(
        "INSERT INTO token_state (id, version, closed_since) "
        "SELECT 1, 1, MIN(created_at) FROM api_tokens"
    )


def downgrade() -> None:
    op.drop_table("token_state")
