"""One process of several leads the background work (brain.leadership): elected by a
PostgreSQL advisory lock, taken over when the leader's session ends; on SQLite the one
process leads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import text

from brain.db.engine import make_engine
from brain.leadership import AdvisoryLock, Leadership, elect
from brain.periodic import Periodic

RETRY_S = 0.05
WAIT_S = 5.0


def wait_until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_two_electors_on_one_database_elect_exactly_one(db):
    first, second = elect(db, retry_s=RETRY_S), elect(db, retry_s=RETRY_S)
    try:
        assert wait_until(lambda: first.leading() or second.leading())
        # Many retry intervals later the other has still not taken the lock.
        time.sleep(10 * RETRY_S)
        assert first.leading() != second.leading()
        leader = first if first.leading() else second
        assert leader.report()["detail"]["leader"] is True
    finally:
        first.stop()
        second.stop()


def test_a_follower_takes_over_when_the_leaders_session_ends(db):
    # The leader is another process: only its lock session is here.
    other = AdvisoryLock(db, 0x7465_7374, "the test's work")
    follower = Leadership(AdvisoryLock(db, other.key, "the test's work"), RETRY_S)
    assert other.acquire()
    follower.start()
    try:
        time.sleep(5 * RETRY_S)
        assert not follower.leading()
        # The leader's session dies (its process crashed, its host was lost): the
        # follower takes over within its retry interval.
        pid = other._conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        assert wait_until(follower.leading)
        assert not other.acquire()  # notices its lost session; cannot take the lock back
        # A leader that stops hands the lock over at once, not when its process ends.
        follower.stop()
        assert not follower.leading()
        assert other.acquire()
    finally:
        follower.stop()
        other.release()


class GatedLock(AdvisoryLock):
    """An advisory lock whose holder asks it only while the test lets it."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.open = threading.Event()
        self.open.set()
        self.parked = threading.Event()  # a check waits at the closed gate

    def acquire(self) -> bool:
        if not self.open.is_set():
            self.parked.set()
        self.open.wait()
        return super().acquire()


def test_a_leader_whose_session_ended_stands_down_when_another_took_over(db):
    lock = GatedLock(db, 0x7465_7374, "the test's work")
    leader = Leadership(lock, RETRY_S)
    other = AdvisoryLock(db, lock.key, "the test's work")
    leader.start()
    try:
        assert wait_until(leader.leading)
        lock.open.clear()  # the leader's next check waits until another process leads
        assert wait_until(lock.parked.is_set)  # so no check is past the gate any more
        pid = lock._conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        assert wait_until(other.acquire)
        lock.open.set()
        assert wait_until(lambda: not leader.leading())
    finally:
        lock.open.set()
        leader.stop()
        other.release()


def test_on_sqlite_the_one_process_leads(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'brain.db'}")
    leadership = elect(engine, retry_s=RETRY_S)
    try:
        assert wait_until(leadership.leading)
    finally:
        leadership.stop()
        engine.dispose()


def test_periodic_work_runs_only_while_leading():
    ran = threading.Event()
    leading = threading.Event()
    periodic = Periodic("test work", 0.01, ran.set, only_if=leading.is_set)
    periodic.start()
    try:
        assert not ran.wait(0.2)  # 20 turns, none taken
        leading.set()
        assert ran.wait(WAIT_S)
    finally:
        periodic.stop()
