"""Reads without a transaction: a GET's session runs each statement on its own (no
BEGIN and COMMIT round trips) and cannot write; every other method keeps its
transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, event, func, select, text, update

from api.state import server_state
from brain.db.engine import (
    ReadOnlySessionError,
    ReadSession,
    make_read_session_factory,
    sort_memory,
)
from brain.db.models import JobRow
from brain.domain import utcnow
from brain.services import jobs
from tests.builders import job_body, make_job
from tests.builders.statements import from_authentication, from_background


def test_a_read_session_runs_outside_a_transaction(db):
    with make_read_session_factory(db)() as session:
        # In a transaction now() is the transaction's start, earlier than the statement's.
        first, statement_start = session.execute(text("SELECT now(), statement_timestamp()")).one()
        assert first == statement_start
        assert session.connection().connection.dbapi_connection.autocommit is True


@pytest.mark.parametrize(
    "write",
    [
        lambda session: session.execute(update(JobRow).values(name="renamed")),
        lambda session: session.execute(delete(JobRow)),
    ],
    ids=["update", "delete"],
)
def test_a_read_session_refuses_core_writes_and_nothing_changes(db, session_factory, write):
    with session_factory() as writer:
        make_job(writer, "job-1", start=utcnow())
        writer.commit()
    with make_read_session_factory(db)() as session, pytest.raises(ReadOnlySessionError):
        write(session)
    with session_factory() as check:
        assert check.scalars(select(JobRow.name)).all() == ["resnet"]


def test_a_read_session_refuses_an_orm_flush_and_stores_nothing(db, session_factory):
    with make_read_session_factory(db)() as session:
        session.add(JobRow(uid="job-2", name="x", user="bob", group_key="bob/x"))
        with pytest.raises(ReadOnlySessionError, match="insert"):
            session.flush()
    with session_factory() as check:
        assert check.scalar(select(func.count()).select_from(JobRow)) == 0


def test_sort_memory_is_reset_before_the_connection_returns_to_the_pool(db):
    factory = make_read_session_factory(db)
    with factory() as session:
        default = session.execute(text("SHOW work_mem")).scalar_one()
        with sort_memory(session, "77MB"):
            assert session.execute(text("SHOW work_mem")).scalar_one() == "77MB"
        assert session.execute(text("SHOW work_mem")).scalar_one() == default


def test_sort_memory_in_a_transaction_ends_with_it(session):
    default = session.execute(text("SHOW work_mem")).scalar_one()
    with sort_memory(session, "77MB"):
        assert session.execute(text("SHOW work_mem")).scalar_one() == "77MB"
    session.commit()
    assert session.execute(text("SHOW work_mem")).scalar_one() == default


def test_gets_read_without_a_transaction_and_writes_keep_theirs(client, session_factory):
    seen: list[tuple[str, bool]] = []

    def note(conn, _cursor, statement, *_rest) -> None:
        if not from_background(statement) and not from_authentication(statement):
            seen.append((statement.split()[0], conn.connection.dbapi_connection.autocommit))

    event.listen(server_state(client.app).engine, "before_cursor_execute", note)
    assert client.put("/api/v1/jobs/job-1", json=job_body()).status_code == 201
    writes, seen[:] = list(seen), []
    assert client.get("/api/v1/jobs/job-1").status_code == 200
    reads = list(seen)
    assert writes and not any(autocommit for _, autocommit in writes)
    assert reads and all(autocommit for _, autocommit in reads)
    with session_factory() as check:
        assert jobs.get_job(check, "job-1").name == "ctr-train"


def test_a_read_session_offers_no_write_to_the_type_checker():
    surface = {name for name in dir(ReadSession) if not name.startswith("_")}
    assert surface == {
        "bind",
        "connection",
        "execute",
        "get",
        "get_bind",
        "info",
        "scalar",
        "scalars",
    }
