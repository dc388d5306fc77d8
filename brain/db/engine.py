"""Engine and session factory, built by whoever starts the process (app lifespan, CLI)."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker


def make_engine(database_url: str, **kwargs) -> Engine:
    if database_url.startswith("sqlite"):
        engine = create_engine(
            database_url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "savepoint", _sqlite_begin_before_savepoint)
        return engine
    if "poolclass" not in kwargs:
        # The API runs blocking handlers on AnyIO's pool of 40 threads, each of which may
        # hold a connection: keep 40 open so that none waits for one while threads are
        # free. Connections beyond pool_size are closed when returned, and opening one
        # costs PostgreSQL a backend process, so a small pool under load spent its time
        # connecting. The overflow serves the collector and gRPC threads.
        kwargs.setdefault("pool_size", 40)
        kwargs.setdefault("max_overflow", 10)
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(database_url, **kwargs)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def _sqlite_begin_before_savepoint(conn, _name) -> None:
    # Python's sqlite3 driver opens a transaction only before INSERT, UPDATE or DELETE.
    # A SAVEPOINT issued first would open one of its own, and its RELEASE would commit
    # everything so far: begin the real transaction before it instead.
    dbapi_connection = conn.connection.dbapi_connection
    if not dbapi_connection.in_transaction:
        dbapi_connection.execute("BEGIN")


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)
