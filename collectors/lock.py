"""One collector at a time when several Brain replicas share a PostgreSQL.

The leader holds a session-level advisory lock on a connection of its own (autocommit, so
it never sits idle in a transaction). PostgreSQL releases the lock when that session ends:
a replica that exits or crashes hands over at once, and one whose host vanishes within
about a minute, because the lock session asks the server for short TCP keepalives.
Another replica's next ``acquire()`` then succeeds. On SQLite there is one process by
construction: the lock is always granted.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Engine, text

log = logging.getLogger(__name__)

# The advisory lock key (the bytes "braincol"), the same in every replica.
COLLECTOR_LOCK_KEY = 0x6272_6169_6E63_6F6C

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
    """A PostgreSQL session advisory lock, kept by a dedicated connection."""

    def __init__(self, engine: Engine, key: int = COLLECTOR_LOCK_KEY) -> None:
        self.engine = engine
        self.key = key
        self._conn: Connection | None = None

    @property
    def holding(self) -> bool:
        return self._conn is not None

    def acquire(self) -> bool:
        """True while this process holds the lock, False while another replica does; never
        blocks. Call before each cycle: it also notices a lock lost with its connection.
        Raises ``LockUnavailable`` when the database cannot be reached."""
        if self._conn is not None:
            try:
                self._conn.execute(text("SELECT 1"))
                return True
            except Exception as exc:  # noqa: BLE001 - any failure means the session is gone
                log.warning("collector lock connection lost (%s); standing down", exc)
                self._discard()
        conn = None
        try:
            conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            for statement in _KEEPALIVES:
                conn.execute(text(statement))
            got = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key})
            if got.scalar():
                self._conn = conn
                log.info("this replica now runs the Prometheus collector")
                return True
            conn.close()
            return False
        except Exception as exc:  # noqa: BLE001 - any database failure
            if conn is not None:
                _close_quietly(conn, invalidate=True)
            raise LockUnavailable(f"cannot take the collector lock: {exc}") from exc

    def release(self) -> None:
        if self._conn is None:
            return
        try:
            self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
        except Exception as exc:  # noqa: BLE001
            log.debug("collector lock unlock failed: %s", exc)
        self._discard()

    def _discard(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Really close the session (not back to the pool) so nothing of it lingers.
            _close_quietly(conn, invalidate=True)


def _close_quietly(conn: Connection, *, invalidate: bool) -> None:
    try:
        if invalidate:
            conn.invalidate()
        conn.close()
    except Exception as exc:  # noqa: BLE001
        log.debug("closing the collector lock connection: %s", exc)


def leader_lock(engine: Engine) -> NoLock | AdvisoryLock:
    if engine.dialect.name == "postgresql":
        return AdvisoryLock(engine)
    return NoLock()
