"""Request-scoped dependencies, as ``Annotated`` aliases for handler signatures.

The request owns the transaction: ``SessionDep`` opens one, commits it when the
handler returns and rolls it back when it raises, so handlers and services never
commit (services add and flush, and take a savepoint where they race). The commit
happens before the response is sent (``scope="function"``): a client never sees a
success for a write that did not commit, and background tasks see the write. A GET
or HEAD only reads: it asks for ``ReadSessionDep``, a ``brain.db.engine.ReadSession``
to the type checker (no add, flush or commit), which runs each statement on its own,
without a transaction, and refuses to write when run; a GET that now and then writes
asks for ``UpgradableReadSessionDep``.

Thread hops: opening the session touches no database (it takes a connection at its
first statement), so it happens on the event loop; a handler offloaded by
``api.routing.OffloadedRoute`` commits or rolls back in the thread that ran it
(``finish_request``), so a request makes one trip to the thread pool, not one per
dependency step, and holds no connection while it waits for the loop. Only a
transaction still open when the dependency exits (another route class) is finished on
the thread pool there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from api.state import server_state
from brain.config import Settings
from brain.db.engine import ReadSession
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing_model import SizingModel
from brain.telemetry import Telemetry

_AFTER_COMMIT = "after_commit"
_REQUEST_OWNED = "request_owned"
_TRANSACTION_FACTORY = "transaction_factory"
_UPGRADED = "upgraded"


# Methods that never write: their requests read without a transaction (no BEGIN and
# COMMIT round trips; see brain.db.engine.make_read_session_factory).
READ_METHODS = frozenset({"GET", "HEAD"})


async def request_session(request: Request) -> AsyncIterator[Session]:
    """A read session for GET and HEAD, otherwise a transaction."""
    state = server_state(request.app)
    reads = request.method in READ_METHODS
    factory = state.read_session_factory if reads else state.session_factory
    async for session in _owned(factory()):
        yield session


async def read_session(request: Request) -> AsyncIterator[ReadSession]:
    """For a handler that only reads: a session without a transaction that refuses to
    write, typed so that the type checker refuses a write through it too."""
    async for session in _owned(server_state(request.app).read_session_factory()):
        yield session


async def upgradable_read_session(request: Request) -> AsyncIterator[Session]:
    """For a GET that now and then must write (a suggestion summarizes a related run that
    finished moments ago): a read session, which ``api.routing.OffloadedRoute`` swaps for
    a transaction when the handler tries to write, running the handler again. The first
    try wrote nothing (a read session cannot), so running it again is safe, and the usual
    read pays no BEGIN and COMMIT."""
    state = server_state(request.app)
    session = state.read_session_factory()
    session.info[_TRANSACTION_FACTORY] = state.session_factory
    async for owned in _owned(session):
        yield owned


def upgrade_to_transaction(values: dict[str, Any]) -> bool:
    """Replace, among a handler's arguments, a request's read session that may be
    upgraded (``upgradable_read_session``) by a new transaction; False if there is none."""
    for name, value in values.items():
        if isinstance(value, Session) and _TRANSACTION_FACTORY in value.info:
            value.close()  # its connection goes back to the pool before the next is taken
            session = value.info.pop(_TRANSACTION_FACTORY)()
            session.info[_REQUEST_OWNED] = session.info[_UPGRADED] = True
            session.begin()
            values[name] = session
            return True
    return False


async def _owned(session: Session) -> AsyncIterator[Session]:
    session.info[_REQUEST_OWNED] = True
    session.begin()
    try:
        yield session
    except BaseException:
        await _finish_off_loop(session, commit=False)
        raise
    await _finish_off_loop(session, commit=True)


async def _finish_off_loop(session: Session, commit: bool) -> None:
    try:
        if session.in_transaction():  # not finished in the handler's thread
            await run_in_threadpool(finish_transaction, session, commit)
    finally:
        session.close()  # no connection is held any more: nothing to wait for


def finish_request(values: dict[str, Any], commit: bool) -> None:
    """Commit (or roll back) the request's session among a handler's arguments in the
    handler's own thread; ``OffloadedRoute`` calls it when the handler returns or raises."""
    for value in values.values():
        if isinstance(value, Session) and value.info.get(_REQUEST_OWNED):
            try:
                finish_transaction(value, commit)
            finally:
                if value.info.get(_UPGRADED):  # no dependency closes it
                    value.close()


def finish_transaction(session: Session, commit: bool) -> None:
    """Commit and run the after-commit callbacks, or roll back; a commit that fails is
    rolled back, so the session keeps no connection either way."""
    if not commit:
        session.rollback()
        return
    try:
        session.commit()
    except BaseException:
        session.rollback()
        raise
    for callback in session.info.pop(_AFTER_COMMIT, ()):
        callback()


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the request's transaction has committed (e.g. count what
    was stored only when it was)."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


# Plain reads of app state: async, so they skip the thread-pool hop of sync dependencies.
async def get_settings(request: Request) -> Settings:
    return server_state(request.app).settings


async def get_telemetry(request: Request) -> Telemetry:
    return server_state(request.app).telemetry


async def get_registry(request: Request) -> OptimizerRegistry:
    return server_state(request.app).registry


SessionDep = Annotated[Session, Depends(request_session, scope="function")]
ReadSessionDep = Annotated[ReadSession, Depends(read_session, scope="function")]
UpgradableReadSessionDep = Annotated[Session, Depends(upgradable_read_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
TelemetryDep = Annotated[Telemetry, Depends(get_telemetry)]
RegistryDep = Annotated[OptimizerRegistry, Depends(get_registry)]


async def get_sizing_model(request: Request) -> SizingModel | None:
    """The learned recommender current at this request (None: none)."""
    return server_state(request.app).current_sizing_model()


SizingModelDep = Annotated[SizingModel | None, Depends(get_sizing_model)]
