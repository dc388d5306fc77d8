"""Engine and session factory, built by whoever starts the process (app lifespan, CLI)."""

from __future__ import annotations

import time

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

# A pooled connection returned less than this long ago is handed out without a ping.
IDLE_PING_S = 5.0
_RETURNED_AT = "returned_at"


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
        # The most recently returned connection first: a few stay busy (and skip the
        # ping below, and keep psycopg's prepared statements warm) instead of all 40
        # taking turns.
        kwargs.setdefault("pool_use_lifo", True)
    engine = create_engine(database_url, **kwargs)
    if not kwargs.get("pool_pre_ping"):
        _ping_idle_connections(engine)
    return engine


def _ping_idle_connections(engine: Engine) -> None:
    """Ping a pooled connection before use only when it sat idle for IDLE_PING_S.

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a round trip per request,
    a fifth of a portrait's. A connection used moments ago is alive unless the server
    went away in between; then the statement fails, SQLAlchemy invalidates the whole
    pool, and that one request answers 503 ``database_unavailable``. After an idle
    spell (a restart while the service was quiet) the ping finds the dead connection
    and the pool replaces it, as pre-ping would.
    """

    def note_return(_dbapi_connection, record) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    def ping_if_idle(dbapi_connection, record, _proxy) -> None:
        returned = record.info.get(_RETURNED_AT)
        if returned is not None and time.monotonic() - returned < IDLE_PING_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError(f"pooled connection is dead: {exc}") from exc

    event.listen(engine, "connect", note_return)
    event.listen(engine, "checkin", note_return)
    event.listen(engine, "checkout", ping_if_idle)


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
