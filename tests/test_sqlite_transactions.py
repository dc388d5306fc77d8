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
