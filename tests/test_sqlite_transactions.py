"""The embedded SQLite default keeps a request's transaction whole, savepoints included.

Python's sqlite3 driver (legacy transaction control) opens a transaction only before an
INSERT, UPDATE or DELETE. When a savepoint came first (``begin_nested``, as the upsert
of a new job does), SQLite opened the transaction with the SAVEPOINT itself and its
RELEASE committed everything: a later error in the same request no longer undid it.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from brain.db.engine import make_engine, make_session_factory
from brain.db.models import JobRow
from brain.services import jobs


class Boom(Exception):
    pass


def test_a_released_savepoint_is_undone_with_its_transaction(sqlite_url):
    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    try:
        with pytest.raises(Boom), factory() as session, session.begin():
            created = jobs.JobInput(name="n", user="u")
            _, was_created = jobs.upsert_job(session, "j1", created)  # a savepoint, released
            assert was_created
            raise Boom  # the request fails after the insert
        with factory() as session:
            assert session.scalar(select(func.count()).select_from(JobRow)) == 0
    finally:
        engine.dispose()


def test_a_savepoint_waits_for_another_writer_and_then_reads_what_it_wrote(sqlite_url):
    """A transaction that starts with a savepoint is about to write. Begun deferred, it
    read the database as it was before another connection's pending write, and SQLite
    then refused its own write at once ("database is locked", whatever the busy
    timeout). Begun IMMEDIATE, it waits for that writer, then reads its commit."""
    import sqlite3
    import threading
    import time

    from sqlalchemy import update

    engine = make_engine(sqlite_url)
    factory = make_session_factory(engine)
    try:
        with factory() as session:
            jobs.upsert_job(session, "j1", jobs.JobInput(name="before", user="u"))
            session.commit()
        other = sqlite3.connect(
            sqlite_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
        )
        other.execute("BEGIN IMMEDIATE")
        other.execute("UPDATE jobs SET name = 'other writer'")
        committer = threading.Timer(0.3, other.execute, ["COMMIT"])
        started = time.monotonic()  # before the timer starts: a pause between cannot shorten it
        committer.start()
        with factory() as session:
            with session.begin_nested():
                name = session.scalar(select(JobRow.name))
                session.execute(update(JobRow).values(name=name + ", then this one"))
            session.commit()
        committer.join()
        other.close()
        assert time.monotonic() - started >= 0.25  # it waited for the other writer
        with factory() as session:
            assert session.scalar(select(JobRow.name)) == "other writer, then this one"
    finally:
        engine.dispose()
