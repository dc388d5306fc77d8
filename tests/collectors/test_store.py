"""brain.services.collector_store, the collector's way into the store, on real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from brain.db.models import NodeRow
from brain.domain import EventKind, JobStatus
from brain.services.collector_store import (
    CollectedLoad,
    CollectedResult,
    jobs_to_collect,
    last_sample_times,
    store_collected,
)
from brain.services.events import EventInput
from brain.services.nodes import NodeRef
from brain.services.samples import NodePoint
from tests.collectors.conftest import register_job

T0 = datetime(2024, 3, 1, tzinfo=UTC)


def _register(session_factory) -> dict[str, int]:
    register_job(session_factory, "alpha", "team-a", T0)
    register_job(session_factory, "beta", None, T0, status=JobStatus.succeeded)
    register_job(session_factory, "gamma", None, T0 + timedelta(minutes=5))
    with session_factory() as session:
        return {job.name: job.id for job in jobs_to_collect(session, ["uid-beta"]).known}


def _point(name: str, seconds: int, cpu: float) -> NodePoint:
    return NodePoint(
        name=name, role="worker", index=0, ts=T0 + timedelta(seconds=seconds), cpu=cpu,
        memory_mib=512.0,
    )  # fmt: skip


def test_running_jobs_or_the_selected_ones_whatever_their_status(session_factory):
    ids = _register(session_factory)
    with session_factory() as session:
        running = jobs_to_collect(session)
        selected = jobs_to_collect(session, ["uid-beta", "uid-nope"])
    assert sorted(j.name for j in running.targets) == ["alpha", "gamma"]
    assert running.known == running.targets and running.missing == []
    gamma = next(j for j in running.targets if j.name == "gamma")
    assert (gamma.id, gamma.uid, gamma.namespace) == (ids["gamma"], "uid-gamma", None)
    assert gamma.start == T0 + timedelta(minutes=5)
    # A selected job is collected alone, but series may still belong to running jobs.
    assert [j.name for j in selected.targets] == ["beta"]
    assert sorted(j.name for j in selected.known) == ["alpha", "beta", "gamma"]
    assert selected.missing == ["uid-nope"]


def test_stored_load_ends_at_each_jobs_newest_point(session_factory):
    ids = _register(session_factory)
    load = CollectedLoad(points=[_point("alpha-edljob-worker-0", s, 1.0) for s in (0, 15, 30)])
    with session_factory() as session, session.begin():
        store_collected(session, ids["alpha"], load, 300)
    with session_factory() as session:
        assert last_sample_times(session, [ids["alpha"], ids["gamma"]]) == {
            ids["alpha"]: T0 + timedelta(seconds=30),
            ids["gamma"]: None,
        }
        assert last_sample_times(session, []) == {}


def test_store_collected_writes_points_and_kills_once(session_factory):
    ids = _register(session_factory)
    worker, ps = "alpha-edljob-worker-0", "alpha-edljob-ps-0"
    kill = EventInput(ts=T0 + timedelta(seconds=15), kind=EventKind.oom, node=ps, detail="x")
    load = CollectedLoad(
        points=[_point(worker, 0, 1.0), _point(worker, 15, 1.5)],
        events=[kill],
        event_nodes=[NodeRef(ps, "ps", 0)],
    )
    with session_factory() as session, session.begin():
        assert store_collected(session, ids["alpha"], load, 300) == CollectedResult(2, 0, 1)
    with session_factory() as session, session.begin():
        assert store_collected(session, ids["alpha"], load, 300) == CollectedResult(0, 2, 0)
        assert store_collected(session, 999_999, load, 300) is None  # deleted meanwhile
    with session_factory() as session:
        nodes = session.execute(
            select(NodeRow.name, NodeRow.role, NodeRow.cpu).order_by(NodeRow.name)
        ).all()
    # Unknown nodes are created with their role's request (register_job: ps 2, worker 4).
    assert [tuple(n) for n in nodes] == [(ps, "ps", 2.0), (worker, "worker", 4.0)]


def test_a_pod_the_next_scrape_no_longer_sees_is_stopped_after_the_silence(session_factory):
    """worker-0 is scraped at 0 and 60 s, worker-1 at 0 to 180 s: with 100 s of silence
    allowed, worker-0 (120 s older than the job's newest point) is stopped from 60 s on;
    the node an OOM event alone named (no sample) is not judged."""
    ids = _register(session_factory)
    gone, kept, killed = "alpha-edljob-worker-0", "alpha-edljob-worker-1", "alpha-edljob-ps-0"
    kill = EventInput(ts=T0, kind=EventKind.oom, node=killed, detail="x")
    first = CollectedLoad(
        points=[_point(gone, 0, 1.0), _point(gone, 60, 1.0), _point(kept, 0, 1.0)],
        events=[kill],
        event_nodes=[NodeRef(killed, "ps", 0)],
    )
    later = CollectedLoad(points=[_point(kept, s, 1.0) for s in (60, 120, 180)])
    with session_factory() as session, session.begin():
        store_collected(session, ids["alpha"], first, 100)
        store_collected(session, ids["alpha"], later, 100)
    with session_factory() as session:
        nodes = session.execute(
            select(NodeRow.name, NodeRow.status, NodeRow.finished_at).order_by(NodeRow.name)
        ).all()
    assert [tuple(n) for n in nodes] == [
        (killed, "running", None),
        (gone, "stopped", T0 + timedelta(seconds=60)),
        (kept, "running", None),
    ]
