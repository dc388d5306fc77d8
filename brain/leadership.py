"""Which process runs the background work when several serve one database.

``brain serve`` runs several worker processes, and several replicas may share one
PostgreSQL. Periodic work that must happen once (summary refresh and retention, model
retraining) runs only in the process that holds a PostgreSQL session advisory lock on a
connection of its own (autocommit, never idle in a transaction, not from the pool).
PostgreSQL releases the lock when that session ends: a process that exits or crashes
hands over at once, one whose host vanishes within about a minute (the lock session asks
for short TCP keepalives). The others try again every ``retry_s`` seconds, so a survivor
takes over within that; the leader checks its lock connection as often and stands down
when it lost it. On SQLite there is one process by construction: it leads.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

# The advisory lock key of the background work (the bytes "brainldr"), in every process.
LEADER_LOCK_KEY = 0x6272_6169_6E6C_6472
# How often a follower tries to take over and the leader checks it still holds the lock.
LEADER_RETRY_S = 5.0

_KEEPALIVES = (
    "SET tcp_keepalives_idle = 30",
    "SET tcp_keepalives_interval = 10",
    "SET tcp_keepalives_count = 3",
)


class LockUnavailable(Exception):
    """The database could not be asked for the lock (as opposed to: another holds it)."""


class NoLock:
    """Single-process databases: always the leader."""

    holding = True

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        return None


class AdvisoryLock:
    """A PostgreSQL session advisory lock, kept by a dedicated connection. ``purpose``
    names what the lock guards, for the log."""

    def __init__(self, engine: Engine, key: int, purpose: str) -> None:
        # Outside ``engine``'s pool: the lock session is opened for each attempt and held
        # while leading, and never counts against (or waits for) the requests' pool.
        self.engine = create_engine(engine.url, poolclass=NullPool)
        self.key = key
        self.purpose = purpose
        self._conn: Connection | None = None

    @property
    def holding(self) -> bool:
        return self._conn is not None

    def acquire(self) -> bool:
        """True while this process holds the lock, False while another does; never
        blocks. Call before each unit of work: it also notices a lock lost with its
        connection. Raises ``LockUnavailable`` when the database cannot be reached."""
        if self._conn is not None:
            try:
                self._conn.execute(text("SELECT 1"))
                return True
            except Exception as exc:  # noqa: BLE001 - any failure means the session is gone
                log.warning("lock connection of %s lost (%s); standing down", self.purpose, exc)
                self._discard()
        conn = None
        try:
            conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            for statement in _KEEPALIVES:
                conn.execute(text(statement))
            got = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key})
            if got.scalar():
                self._conn = conn
                log.info("process %d now runs %s", os.getpid(), self.purpose)
                return True
            conn.close()
            return False
        except Exception as exc:  # noqa: BLE001 - any database failure
            if conn is not None:
                _close_quietly(conn)
            raise LockUnavailable(f"cannot take the lock of {self.purpose}: {exc}") from exc

    def release(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
        except Exception as exc:  # noqa: BLE001
            log.debug("unlocking %s failed: %s", self.purpose, exc)
        self._discard()

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            _close_quietly(conn)


def _close_quietly(conn: Connection) -> None:
    try:
        conn.close()
    except Exception as exc:  # noqa: BLE001
        log.debug("closing a lock connection: %s", exc)


class Leadership:
    """Whether this process leads the background work, kept current by a daemon thread
    that asks ``lock`` every ``retry_s`` seconds. ``leading()`` is what periodic work
    checks before each unit (brain.periodic)."""

    def __init__(self, lock: AdvisoryLock | NoLock, retry_s: float = LEADER_RETRY_S) -> None:
        self._lock = lock
        self._retry_s = retry_s
        self._leading = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="leader election", daemon=True)

    def leading(self) -> bool:
        return self._leading

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop trying and hand the lock over (at once, not when the process ends)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._leading = False
        self._lock.release()

    def report(self) -> dict[str, Any]:
        """For /readyz: whether this process (pid) leads."""
        return {"status": "ok", "detail": {"leader": self._leading, "pid": os.getpid()}}

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._leading = self._lock.acquire()
            except LockUnavailable as exc:
                if self._leading:
                    log.warning("background work paused: %s", exc)
                self._leading = False
            self._stop.wait(self._retry_s)


def lock_for(engine: Engine, key: int, purpose: str) -> AdvisoryLock | NoLock:
    """The advisory lock on PostgreSQL; on SQLite (one process) none is needed."""
    if engine.dialect.name == "postgresql":
        return AdvisoryLock(engine, key, purpose)
    return NoLock()


def elect(engine: Engine, retry_s: float = LEADER_RETRY_S) -> Leadership:
    """A started ``Leadership`` of the background work on ``engine``'s database."""
    leadership = Leadership(lock_for(engine, LEADER_LOCK_KEY, "the background work"), retry_s)
    leadership.start()
    return leadership
