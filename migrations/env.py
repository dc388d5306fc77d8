"""Alembic environment: the URL comes from the caller (brain.db.migrate), never from a file."""

from alembic import context
from sqlalchemy import pool, text

from brain.db.engine import make_engine
from brain.db.models import Base

config = context.config
target_metadata = Base.metadata

# Held while migrating on PostgreSQL (the bytes "brainmig"): pods starting at once each
# run `brain db upgrade`; one migrates, the others wait for it and then find nothing to
# do, instead of creating the same tables at the same time.
MIGRATION_LOCK_KEY = 0x6272_6169_6E6D_6967


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # A batch migration rebuilds a table: it copies it, then drops the old one, and
        # with foreign keys on that DROP would delete every row referencing it (ON
        # DELETE CASCADE). The pragma only takes effect outside a transaction, so it is
        # set on the driver's connection before Alembic begins one.
        connection.connection.dbapi_connection.execute("PRAGMA foreign_keys=OFF")
    try:
        _migrate(connection)
    finally:
        if sqlite:
            connection.connection.dbapi_connection.execute("PRAGMA foreign_keys=ON")


def _migrate(connection) -> None:
    # Batch mode lets ALTERs run on SQLite too.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Taken before Alembic reads the applied revision; released at commit.
            connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
