"""Migrations build the schema from nothing, on PostgreSQL and SQLite, with no drift."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
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


def test_concurrent_upgrades_migrate_once_and_all_succeed(make_pg_database):
    """Pods of one rollout each run `brain db upgrade` as they start (an init
    container): they must not create the same tables at the same time."""
    url = make_pg_database()
    env = {**os.environ, "BRAIN_DATABASE_URL": url}
    upgrades = [
        subprocess.Popen(
            [sys.executable, "-m", "api.main", "db", "upgrade"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [(p.wait(120), p.stderr.read()) for p in upgrades]
    for p in upgrades:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _ in results] == [0, 0, 0], results
    # Each revision ran once: one process logged the whole chain, the others nothing.
    running = [err.count("Running upgrade") for _, err in results]
    assert sorted(running) == [0, 0, len(_revisions(url))], running
    assert _drift(url) == []


def _revisions(url: str) -> list[str]:
    return list(ScriptDirectory.from_config(migrate.alembic_config(url)).walk_revisions())
