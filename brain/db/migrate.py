"""Run Alembic migrations programmatically (the CLI and tests use this)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.engine import make_url


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("migrations")))
    # ConfigParser interpolation would choke on "%" in passwords.
    config.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Migrate to ``revision``; a SQLite file's directory is created first (the per-user
    data directory of the default may not exist yet)."""
    url = make_url(database_url)
    database = url.database or ""
    on_a_file = database not in ("", ":memory:") and not database.startswith("file:")
    if url.drivername.startswith("sqlite") and on_a_file:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(database_url), revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision(database_url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()


@dataclass(frozen=True)
class SchemaStatus:
    """Where the database's schema is against the migrations this code carries."""

    applied: str | None
    head: str | None

    @property
    def up_to_date(self) -> bool:
        return self.applied == self.head

    def problem(self) -> str:
        """What is wrong and the command that fixes it (for logs and 503 answers)."""
        return (
            f"the database schema is at revision {self.applied or 'none (never migrated)'}, "
            f"this Brain needs {self.head}: run `brain db upgrade` (or `brain serve --migrate`)"
        )


def schema_status(engine: Engine, head: str | None) -> SchemaStatus:
    """Read the applied revision; raises the driver's error when the database is down."""
    return SchemaStatus(applied=current_revision(engine), head=head)
