"""Engine and session factory, built by whoever starts the process (app lifespan, CLI)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, TypeVarTuple, overload

from sqlalchemy import (
    Connection,
    Engine,
    Executable,
    Result,
    ScalarResult,
    create_engine,
    event,
    text,
)
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.dml import UpdateBase

if TYPE_CHECKING:
    from sqlalchemy.sql.selectable import TypedReturnsRows
    from sqlalchemy.util.typing import TupleAny

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

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
    # everything so far: begin the real transaction before it instead. IMMEDIATE: a
    # savepoint is where a write begins, and a deferred transaction that read first is
    # refused its first write at once ("database is locked", whatever the busy timeout)
    # when another connection wrote meanwhile; taking the write lock up front waits for
    # that writer instead and then reads what it wrote.
    dbapi_connection = conn.connection.dbapi_connection
    if not dbapi_connection.in_transaction:
        dbapi_connection.execute("BEGIN IMMEDIATE")


def ping(engine: Engine) -> None:
    """One ``SELECT 1`` on a pooled connection: raises when the database does not answer."""
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


class ReadOnlySessionError(RuntimeError):
    """Something tried to write through a session made for reading."""


class ReadSession(Protocol):
    """A session to read through, as the type checker sees it: statements and lookups,
    no ``add``, ``delete``, ``flush``, ``commit`` or savepoint. What a read-only request
    is given (``make_read_session_factory``'s sessions, which also refuse writes when
    run) and what reading services take; a ``Session`` is one too, so a writer can call
    them with its own."""

    @property
    def info(self) -> dict[Any, Any]: ...

    @property
    def bind(self) -> Engine | Connection | None: ...

    @overload
    def execute(self, statement: TypedReturnsRows[*_Ts], params: Any = None) -> Result[*_Ts]: ...

    @overload
    def execute(self, statement: Executable, params: Any = None) -> Result[*TupleAny]: ...

    @overload
    def scalar(self, statement: TypedReturnsRows[_T], params: Any = None) -> _T | None: ...

    @overload
    def scalar(self, statement: Executable, params: Any = None) -> Any: ...

    @overload
    def scalars(self, statement: TypedReturnsRows[_T], params: Any = None) -> ScalarResult[_T]: ...

    @overload
    def scalars(self, statement: Executable, params: Any = None) -> ScalarResult[Any]: ...

    def get(self, entity: Any, ident: Any) -> Any: ...

    def get_bind(self) -> Engine | Connection: ...

    def connection(self) -> Connection: ...


def make_read_session_factory(engine: Engine) -> sessionmaker[Session]:
    """Sessions for requests that only read: each statement runs on its own, without
    ``BEGIN`` and ``COMMIT``.

    Those two are round trips of their own, half of a two-statement read's, and under
    load every round trip waits for PostgreSQL's process to be scheduled. The price is
    that the statements of one read may see different moments (a write committed in
    between shows in the later ones only); a read that needs one moment asks in one
    statement. Nothing can be written through these sessions: an INSERT, UPDATE or
    DELETE (the ORM's flushes included) raises, so no write commits piecemeal outside a
    transaction.
    """
    reading = engine.execution_options(isolation_level="AUTOCOMMIT")
    event.listen(reading, "before_execute", _refuse_writes)
    event.listen(reading, "savepoint", _refuse_savepoints)
    return sessionmaker(reading, expire_on_commit=False)


def _refuse_savepoints(_conn, _name) -> None:
    # A savepoint is where a write begins (and outside a transaction PostgreSQL refuses it).
    raise ReadOnlySessionError("a read-only session cannot take a savepoint; use a transaction")


def _refuse_writes(_conn, statement, _multiparams, _params, _options) -> None:
    if isinstance(statement, UpdateBase):
        raise ReadOnlySessionError(
            f"a read-only session cannot {statement.__visit_name__}; use a transaction"
        )


@contextmanager
def sort_memory(session: ReadSession, size: str) -> Iterator[None]:
    """PostgreSQL's ``work_mem`` at ``size`` for the statements run inside.

    In a transaction ``SET LOCAL`` ends with it. A read session has none (``SET LOCAL``
    would do nothing there), so the setting is made for the connection and reset after,
    before the pool hands the connection to anyone else.
    """
    if session.connection().get_execution_options().get("isolation_level") != "AUTOCOMMIT":
        session.execute(text(f"SET LOCAL work_mem = '{size}'"))
        yield
        return
    session.execute(text(f"SET work_mem = '{size}'"))
    try:
        yield
    finally:
        session.execute(text("RESET work_mem"))
