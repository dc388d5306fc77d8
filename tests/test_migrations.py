"""Migrations build the schema from nothing, on PostgreSQL and SQLite, with no drift."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from brain.db import migrate
from brain.db.engine import make_engine
from brain.db.models import Base


def _drift(url: str) -> list:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            return compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite"])
def empty_database(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'empty.db'}"
    return request.getfixturevalue("make_pg_database")()


def test_upgrade_head_on_empty_database_matches_models(empty_database):
    migrate.upgrade(empty_database)
    engine = make_engine(empty_database)
    try:
        assert migrate.current_revision(engine) == migrate.head_revision(empty_database)
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert set(Base.metadata.tables) <= tables
    assert _drift(empty_database) == []


def test_upgrade_is_repeatable(empty_database):
    migrate.upgrade(empty_database)
    migrate.upgrade(empty_database)  # nothing pending: a no-op, not an error
    assert _drift(empty_database) == []
