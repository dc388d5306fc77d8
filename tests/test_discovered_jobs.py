"""Registering discovered jobs (``brain.services.discovered_jobs.record_discovered``): the
stored jobs a cycle's jobs may be are read in one statement, and each job then finds
what it would have found alone in the database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import event, func, select

from brain.db.models import JobRow
from brain.discovered_job import DiscoveredJob
from brain.domain import JobStatus, RoleSpec
from brain.services.discovered_jobs import record_discovered
from brain.services.jobs import JobInput, upsert_job

T0 = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def job(name: str, namespace: str = "ml-a", kind: str = "PyTorchJob", **kw) -> DiscoveredJob:
    values = {
        "namespace": namespace,
        "name": name,
        "kind": kind,
        "user": namespace,
        "group_key": name,
        "roles": {"worker": RoleSpec(count=2, cpu=4)},
        "pods": (),
        "status": JobStatus.running,
        "seen_at": T1,
        "started_at": T0,
    }
    return DiscoveredJob(**{**values, **kw})


@contextmanager
def statements(engine) -> Iterator[list[str]]:
    """The first word of each statement sent meanwhile."""
    seen: list[str] = []

    def record(conn, cursor, statement, params, context, executemany):
        seen.append(statement.split(None, 1)[0].upper())

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_seeing_known_jobs_again_reads_them_in_one_statement(db, session_factory):
    jobs = [job(f"train-{n}", namespace=f"team-{n % 3}") for n in range(30)]
    with session_factory() as session, session.begin():
        first = record_discovered(session, jobs)
    assert [r.created for r in first] == [True] * 30

    with statements(db) as seen, session_factory() as session, session.begin():
        again = record_discovered(session, jobs)

    # One SELECT for the 30 jobs (besides BEGIN and COMMIT), nothing written.
    assert [s for s in seen if s not in ("BEGIN", "COMMIT")] == ["SELECT"]
    assert [r.job_id for r in again] == [r.job_id for r in first]
    assert not any(r.created or r.changed or r.registered for r in again)


def test_jobs_of_one_cycle_sharing_a_name_are_one_job(session_factory):
    with session_factory() as session, session.begin():
        a, b = record_discovered(
            session, [job("etl-train", kind="PyTorchJob"), job("etl-train", kind="TFJob")]
        )
    assert (a.created, b.created, b.changed) == (True, False, True)
    assert a.job_id == b.job_id
    with session_factory() as session:
        assert session.scalars(select(JobRow.kind)).all() == ["TFJob"]


def test_a_registration_with_the_name_as_uid_holds_the_run(session_factory):
    with session_factory() as session, session.begin():
        registered, _ = upsert_job(
            session,
            "rec-sys",
            JobInput(name="recommender", user="carol", namespace="research", started_at=T0),
        )
    with session_factory() as session, session.begin():
        [recorded] = record_discovered(session, [job("rec-sys", namespace="research")])
    assert (recorded.job_id, recorded.registered, recorded.created) == (registered.id, True, False)


def test_a_reused_name_is_a_new_run_and_namespaces_stay_apart(session_factory):
    done = job("nightly", status=JobStatus.succeeded, finished_at=T0)
    with session_factory() as session, session.begin():
        [old] = record_discovered(session, [done])
    later = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
    with session_factory() as session, session.begin():
        new, other = record_discovered(
            session,
            [job("nightly", started_at=later), job("nightly", namespace="ml-b", started_at=later)],
        )
    assert new.created and other.created
    assert len({old.job_id, new.job_id, other.job_id}) == 3
    # The later run of ml-a takes the name and its start; ml-b's name was free.
    assert (new.uid, other.uid) == ("nightly-20261121080000", "nightly")
    with session_factory() as session:
        assert session.scalar(select(func.count()).select_from(JobRow)) == 3
