"""The two ways a batch comes in (fast checks, or SampleBatch when they decline) and the
two ways it is stored (binary COPY straight in; through a staging table with
insert-or-ignore when some point is stored already)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.schemas.samples import fast_validated_batch
from brain.bounds import InputBounds
from brain.db.models import JobRow, NodeSampleRow, SpeedSampleRow
from brain.services import samples
from tests.builders import job_body, make_job, node_point

TS = "2026-03-01T00:00:00Z"


def _body(*points: dict) -> bytes:
    return json.dumps({"nodes": list(points)}).encode()


def test_a_plain_batch_passes_the_fast_checks_as_a_sample_batch():
    body = _body(node_point("j-ps-0", "2026-03-01T01:00:00+01:00", 2, 1024, gpu_util=0.5))
    batch = fast_validated_batch(body, InputBounds())
    assert batch is not None
    (point,) = batch.nodes
    assert (point.name, point.role, point.index) == ("j-ps-0", "ps", 0)
    assert point.ts == datetime(2026, 3, 1, tzinfo=UTC)  # the same instant
    assert (point.cpu, point.memory_mib, point.gpu_util) == (2.0, 1024.0, 0.5)


@pytest.mark.parametrize(
    "extra",
    [
        {"cpu": 1024.5},  # above the default plausible 1024 cores
        {"memory_mib": 16 * 1024 * 1024 + 1},
        {"gpu_memory_mib": 16 * 1024 * 1024 + 1},
        {"gpu_memory_total_mib": 16 * 1024 * 1024 + 1},
        {"ts": "1999-12-31T23:59:59Z"},  # before BRAIN_MIN_TIMESTAMP
        {"ts": "2000-01-01T00:30:00+01:00"},  # the same: 1999-12-31T23:30:00Z
        {"ts": "9999-12-31T00:00:00-01:00"},  # not representable in UTC
        {"index": 1.0},  # strict JSON types: no integer from a float...
        {"cpu": "2"},  # ...nor a number from a string
        {"role": "p\u0000s"},
        {"step_time_s": 0},
        {"unknown": 1},
    ],
)
def test_the_fast_checks_decline_what_they_cannot_vouch_for(extra):
    good = node_point("j-ps-0", TS, 2, 1024)
    assert fast_validated_batch(_body(good), InputBounds()) is not None
    assert fast_validated_batch(_body(good, good | extra), InputBounds()) is None


def test_the_site_bounds_are_those_given():
    point = node_point("j-ps-0", "2010-01-01T00:00:00Z", 100, 1024)
    assert fast_validated_batch(_body(point), InputBounds(cpu=100)) is not None
    assert fast_validated_batch(_body(point), InputBounds(cpu=99.5)) is None
    assert fast_validated_batch(_body(point), InputBounds(memory_mib=1023)) is None
    floor = datetime(2010, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert fast_validated_batch(_body(point), InputBounds(min_timestamp=floor)) is None


def test_a_name_holding_a_nul_anywhere_is_declined():
    """Refused by one look at the body, not a pattern per string."""
    named = node_point("j-ps-0", TS, 2, 1024) | {"name": "a\u0000b"}
    assert b"\\u0000" in _body(named)
    assert fast_validated_batch(_body(named), InputBounds()) is None


def test_non_finite_numbers_are_declined():
    raw = _body(node_point("j-ps-0", TS, 2, 1024)).replace(b'"cpu": 2', b'"cpu": NaN')
    assert b"NaN" in raw
    assert fast_validated_batch(raw, InputBounds()) is None


def test_a_declined_batch_is_validated_as_before(client, db):
    """An index of 1.0 is not strict JSON for an integer, yet SampleBatch takes it."""
    client.put("/api/v1/jobs/j", json=job_body())
    point = node_point("j-ps-0", TS, 2, 1024) | {"index": 1.0}
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": [point]}).json() == {
        "accepted": 1,
        "duplicates": 0,
    }
    assert client.get("/api/v1/jobs/j/nodes").json()[0]["index"] == 1


def test_a_future_point_that_came_the_fast_way_is_named_in_utc(client, db):
    """Its offset is kept on the fast way; the answer gives UTC, as SampleBatch's did."""
    client.put("/api/v1/jobs/j", json=job_body())
    points = [
        node_point("j-ps-0", TS, 2, 1024),
        node_point("j-ps-0", "2999-01-01T05:00:00+05:00", 2, 1024),
    ]
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": points})
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == "nodes.1.ts"
    assert error["message"].startswith("nodes.1.ts 2999-01-01T00:00:00+00:00 is in the future")
    assert _count(db) == 0


def test_the_first_offending_field_is_named_as_before(client, db):
    """Point 0 is above a site bound (checked per batch on the fast way), point 1 has a
    bad name (a fixed check): the answer still names point 0, as SampleBatch does."""
    client.put("/api/v1/jobs/j", json=job_body())
    points = [
        node_point("j-ps-0", TS, 2048, 1024),
        node_point("j-ps-1", TS, 1, 1) | {"name": ""},
    ]
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": points})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "nodes.0.cpu"
    assert "BRAIN_PLAUSIBLE_CPU" in response.json()["error"]["message"]


def _count(engine) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(NodeSampleRow))


def _job(session: Session) -> JobRow:
    return make_job(session, "j", start=datetime(2026, 3, 1, tzinfo=UTC), status="running")


def _point(ts_s: int, cpu: float) -> samples.NodePoint:
    ts = datetime(2026, 3, 1, 0, 0, ts_s, tzinfo=UTC)
    return samples.NodePoint("j-worker-0", "worker", 0, ts, cpu, 100.0)


def _stored(session: Session) -> list[tuple[int, float]]:
    rows = session.execute(select(NodeSampleRow.ts, NodeSampleRow.cpu).order_by("ts"))
    return [(ts.second, cpu) for ts, cpu in rows]


def test_batches_in_one_transaction_each_count_only_their_own_points(session):
    """The first goes straight in; the second and third overlap it, fail the straight
    COPY (undoing only its savepoint) and go through the staging table, which each move
    empties, not only the commit."""
    job = _job(session)
    first = samples.ingest(session, job, [_point(0, 1.0), _point(15, 2.0)], [])
    second = samples.ingest(session, job, [_point(15, 9.0), _point(30, 3.0)], [])
    third = samples.ingest(session, job, [_point(30, 9.0), _point(45, 4.0)], [])
    assert (first.accepted, first.duplicates) == (2, 0)
    assert (second.accepted, second.duplicates) == (1, 1)
    assert (third.accepted, third.duplicates) == (1, 1)
    assert _stored(session) == [(0, 1.0), (15, 2.0), (30, 3.0), (45, 4.0)]  # stored values kept


def test_a_point_repeated_in_one_batch_is_stored_once_with_its_last_values(session):
    job = _job(session)
    result = samples.ingest(session, job, [_point(0, 1.0), _point(0, 5.0), _point(15, 2.0)], [])
    assert (result.accepted, result.duplicates) == (2, 1)
    assert _stored(session) == [(0, 5.0), (15, 2.0)]


def test_a_staging_table_rolled_back_with_its_transaction_is_made_again(db):
    """The staging table is created by the first batch that overlaps stored points; when
    that transaction rolls back the table is gone, and the next overlapping batch on
    the same connection creates it again."""
    engine = db.execution_options()  # the same pool: the next session reuses the connection
    with Session(engine) as session:
        job_id = _job(session).id
        session.commit()
        job = session.get(JobRow, job_id)
        assert samples.ingest(session, job, [_point(0, 1.0)], []).accepted == 1
        assert samples.ingest(session, job, [_point(0, 1.0), _point(15, 2.0)], []).accepted == 1
        backend = session.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar()
        session.rollback()
    with Session(engine) as session:
        assert session.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar() == backend
        job = session.get(JobRow, job_id)
        assert samples.ingest(session, job, [_point(15, 2.0)], []).accepted == 1
        result = samples.ingest(session, job, [_point(15, 2.0), _point(30, 3.0)], [])
        session.commit()
        assert (result.accepted, result.duplicates) == (1, 1)
        assert _stored(session) == [(15, 2.0), (30, 3.0)]


def test_speed_points_are_stored_once(session):
    job = _job(session)
    ts = datetime(2026, 3, 1, tzinfo=UTC)
    speed = [samples.SpeedPoint(ts, 2**63 - 1, 12.5, 4), samples.SpeedPoint(ts, 1, 1.0, 1)]
    assert samples.ingest(session, job, [], speed).accepted == 1
    assert samples.ingest(session, job, [], speed[:1]).duplicates == 1
    assert session.scalar(select(func.count()).select_from(SpeedSampleRow)) == 1
    assert session.scalar(select(SpeedSampleRow.global_step)) == 1  # the last values


def test_a_row_the_database_refuses_raises_as_from_sqlalchemy(session):
    """Raised by psycopg during a COPY, wrapped so the API's handlers see it."""
    ghost = JobRow(id=999_999, status="running")
    with pytest.raises(IntegrityError):
        samples.ingest(session, ghost, [], [samples.SpeedPoint(datetime.now(UTC), 1, 1.0, 1)])
