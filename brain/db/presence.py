"""Whether the database a command is about to use is there, before it is used.

SQLite creates a missing file on the first connection: a command that only reads, run
before any database exists (or against a mistyped BRAIN_DATABASE_URL), would leave an
empty ``brain.db`` behind and fail on a missing table.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from brain.db import migrate
from brain.db.engine import make_engine


def missing_sqlite_file(database_url: str) -> Path | None:
    """The absolute path of a SQLite database file that does not exist, else None
    (also for PostgreSQL and in-memory SQLite)."""
    url = make_url(database_url)
    if not url.drivername.startswith("sqlite"):
        return None
    if url.database in (None, "", ":memory:") or url.database.startswith("file:"):
        return None
    path = Path(url.database)
    return None if path.exists() else path.resolve()


def no_database_message(database_url: str, path: Path) -> str:
    relative = (
        ""
        if Path(make_url(database_url).database).is_absolute()
        else (", a path relative to the current directory")
    )
    return (
        f"no database at {path} (BRAIN_DATABASE_URL={database_url}{relative}): nothing to "
        "read yet; create it with `brain db upgrade` (or start `brain serve`, which "
        "creates it), or set BRAIN_DATABASE_URL to Brain's database"
    )


def database_problem(database_url: str) -> str | None:
    """Why a command cannot use the database: no SQLite file, unreachable, or a schema
    that is not this code's; None when it can."""
    path = missing_sqlite_file(database_url)
    if path is not None:
        return no_database_message(database_url, path)
    shown = make_url(database_url).render_as_string(hide_password=True)
    engine = make_engine(database_url)
    try:
        status = migrate.schema_status(engine, migrate.head_revision(database_url))
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return f"cannot read the database at {shown}: {reason}"
    finally:
        engine.dispose()
    return None if status.up_to_date else status.problem()
