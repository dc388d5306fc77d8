"""Alembic migrations of the Brain store (run with `brain db upgrade`)."""
