"""API tokens: name, SHA-256 of the secret, scope, namespaces, expiry, revocation.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _time(name: str, nullable: bool) -> sa.Column:
    return sa.Column(name, brain.db.types.UTCDateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("scope", sa.String(length=8), nullable=False),
        sa.Column("namespaces", sa.JSON(), nullable=True),
        _time("created_at", nullable=False),
        _time("expires_at", nullable=True),
        _time("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
        sa.UniqueConstraint("secret_sha256", name=op.f("uq_api_tokens_secret_sha256")),
    )


def downgrade() -> None:
    op.drop_table("api_tokens")
