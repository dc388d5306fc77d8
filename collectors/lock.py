"""One collector at a time when several Brain processes share a PostgreSQL.

The collector keeps a lock of its own (brain.leadership's advisory lock under another
key) rather than following ``brain serve``'s leader, because `brain collect` run on its
own must also stand by while a ``brain serve`` collects, and the other way round. On
SQLite there is one process by construction: the lock is always granted.
"""

from __future__ import annotations

from sqlalchemy import Engine

from brain import leadership
from brain.leadership import NoLock

# The advisory lock key (the bytes "braincol"), the same in every replica.
COLLECTOR_LOCK_KEY = 0x6272_6169_6E63_6F6C
PURPOSE = "the Prometheus collector"


class AdvisoryLock(leadership.AdvisoryLock):
    """The collector's advisory lock."""

    def __init__(self, engine: Engine, key: int = COLLECTOR_LOCK_KEY) -> None:
        super().__init__(engine, key, PURPOSE)


def leader_lock(engine: Engine) -> NoLock | AdvisoryLock:
    if engine.dialect.name == "postgresql":
        return AdvisoryLock(engine)
    return NoLock()
