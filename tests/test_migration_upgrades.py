"""Upgrades: a database populated at every earlier revision reaches head with its data
intact, on PostgreSQL and SQLite.

Each revision that added a table or a column stores rows using what it added; a
database "at revision r" holds the rows of r and of every revision before it, as a
deployment that ran r for a while would. One ``brain db upgrade`` (to head) must keep
every stored value, and the current code must read every row.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, column, insert, select, table
from sqlalchemy.exc import IntegrityError

from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.db.models import (
    ApiToken,
    Base,
    ClusterStateRow,
    EventRow,
    JobRow,
    JobSummaryRow,
    JobUsageDayRow,
    MasterReportRow,
    NodeRow,
    NodeSampleRow,
    NodeSummaryRow,
    RoleSummaryRow,
    ScalePlanRow,
    SpeedSampleRow,
)
from brain.domain import RoleBounds, RoleSpec
from brain.optimizing.proposal import PlanBody
from brain.summaries.usage_days import day_rows

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
URL_KINDS = ["postgresql", "sqlite"]


def _at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _job(id_: int, uid: str, **extra) -> dict:
    return {
        "id": id_,
        "uid": uid,
        "name": f"train-{uid}",
        "user_name": "ana",
        "dataset": "clicks",
        "group_key": "ana/train/clicks",
        "framework": "tensorflow",
        "strategy": "ps",
        "namespace": "ml",
        "cluster": None,
        "gpu_type": None,
        "limit_cpu": 64.0,
        "limit_memory_mib": 262144.0,
        "limit_gpu": None,
        "roles": {
            "ps": RoleSpec(count=2, cpu=4.0, memory_mib=8192.0, gpu=0.0),
            "worker": RoleSpec(count=4, cpu=8.0, memory_mib=16384.0, gpu=0.0),
        },
        "total_steps": 100_000,
        "status": "succeeded",
        "exit_reason": None,
        "created_at": _at(0),
        "updated_at": _at(60),
        "started_at": _at(1),
        "finished_at": _at(60),
        "summarized_at": None,
        **extra,
    }


def _node(id_: int, job_id: int, role: str, index: int) -> dict:
    return {
        "id": id_,
        "job_id": job_id,
        "name": f"j{job_id}-{role}-{index}",
        "role": role,
        "index": index,
        "cpu": 4.0,
        "memory_mib": 8192.0,
        "gpu": 0.0,
        "status": "succeeded",
        "created_at": _at(1),
        "finished_at": _at(60),
    }


def _node_sample(node_id: int, job_id: int, minute: int, **extra) -> dict:
    return {
        "node_id": node_id,
        "job_id": job_id,
        "ts": _at(minute),
        "cpu": 2.5 + minute / 100,
        "memory_mib": 4096.0 + minute,
        "gpu_util": None,
        "gpu_memory_mib": None,
        "gpu_memory_total_mib": None,
        **extra,
    }


def _plan(id_: int, job_id: int, **extra) -> dict:
    body = PlanBody(
        roles={"worker": RoleSpec(count=6, cpu=8.0, memory_mib=12288.0, gpu=0.0)},
        optimizers=["worker_tuning"],
    )
    return {
        "id": id_,
        "job_id": job_id,
        "stage": "running",
        "status": "applied",
        "body": body,
        "source_event_id": None,
        "status_message": None,
        "created_at": _at(30),
        "updated_at": _at(31),
        **extra,
    }


def _hours(scale: float) -> dict:
    values = {
        f"{kind}_{unit}_hours": scale * (2 if kind == "requested" else 1)
        for unit in ("core", "gib", "gpu")
        for kind in ("requested", "used")
    }
    return {**values, "oom_count": 1, "failure_count": 0}


def _usage(base: float) -> dict:
    values = {"samples": 2}
    for pattern in ("cpu_{}_cores", "memory_{}_mib", "gpu_util_{}", "gpu_memory_{}_mib"):
        for rank, stat in enumerate(("mean", "p50", "p95", "max")):
            values[pattern.format(stat)] = None if "gpu" in pattern else base + rank
    values["gpu_memory_total_mib"] = None
    return values


def _revision_0001() -> list[tuple[type, dict]]:
    return [
        (JobRow, _job(1, "j1")),
        (NodeRow, _node(1, 1, "ps", 0)),
        (NodeRow, _node(2, 1, "worker", 0)),
        (NodeSampleRow, _node_sample(1, 1, 5)),
        (NodeSampleRow, _node_sample(2, 1, 5, gpu_util=0.0)),
        (
            SpeedSampleRow,
            {"job_id": 1, "ts": _at(5), "global_step": 1200, "steps_per_sec": 4.0, "workers": 4},
        ),
        (
            EventRow,
            {
                "id": 1,
                "job_id": 1,
                "node_id": 2,
                "node_name": "j1-worker-0",
                "ts": _at(20),
                "kind": "oom",
                "detail": "exit 137",
            },
        ),  # fmt: skip
        (ScalePlanRow, _plan(1, 1, source_event_id=1)),
    ]


def _summary(job_id: int, uid: str, **extra) -> dict:
    return {
        "job_id": job_id,
        "final": True,
        "computed_at": _at(61),
        "uid": uid,
        "name": f"train-{uid}",
        "user_name": "ana",
        "dataset": "clicks",
        "group_key": "ana/train/clicks",
        "gpu_type": None,
        "status": "succeeded",
        "started_at": _at(1),
        "ended_at": _at(60),
        "run_seconds": 3540.0,
        "node_count": 2,
        "samples": 2,
        "speed_mean_steps_per_s": 4.0,
        "speed_per_worker_mean_steps_per_s": 1.0,
        "plans": [{"id": 1, "stage": "running"}],
        "series_start": _at(5),
        "series_bucket_seconds": 60.0,
        "series_buckets": 1,
        "speed_series": b"\x00\x01\x02",
        **_hours(10.0),
        **extra,
    }


def _revision_0002() -> list[tuple[type, dict]]:
    summary = _summary(1, "j1")
    requests = {"cpu_request_cores": 4.0, "memory_request_mib": 8192.0, "gpu_request": 0.0}
    return [
        (JobSummaryRow, summary),
        (
            RoleSummaryRow,
            {
                "job_id": 1,
                "role": "ps",
                "node_count": 1,
                **requests,
                "usage_series": b"\x03\x04",
                **_usage(2.5),
                **_hours(5.0),
            },
        ),  # fmt: skip
        (
            NodeSummaryRow,
            {
                "job_id": 1,
                "node_id": 1,
                "name": "j1-ps-0",
                "role": "ps",
                **requests,
                "first_sample_at": _at(5),
                "last_sample_at": _at(5),
                "run_seconds": 3540.0,
                "sampled_seconds": 60.0,
                **_usage(2.5),
                **_hours(5.0),
            },
        ),  # fmt: skip
    ]


def _revision_0003() -> list[tuple[type, dict]]:
    return [(ScalePlanRow, _plan(2, 1, applied_at=_at(33)))]


def _revision_0004() -> list[tuple[type, dict]]:
    return [
        (
            MasterReportRow,
            {
                "job_id": 1,
                "kind": "model_info",
                "body": {"params": 1_000_000, "ops": [1, 2]},
                "updated_at": _at(10),
            },
        )  # fmt: skip
    ]


def _revision_0005() -> list[tuple[type, dict]]:
    return [
        (
            ApiToken,
            {
                "id": 1,
                "name": "master",
                "secret_sha256": "ab" * 32,
                "prefix": "brain_abcdef",
                "scope": "write",
                "namespaces": ["ml"],
                "created_at": _at(0),
                "expires_at": _at(60 * 24 * 90),
                "revoked_at": None,
            },
        )  # fmt: skip
    ]


def _cluster(source: str, **extra) -> dict:
    return {
        "source": source,
        "ts": _at(15),
        "nodes": 12,
        "free_cpu": 40.0,
        "free_memory_mib": 81920.0,
        "free_gpu": 0.0,
        "pending_pods": 3,
        "pending_cpu": 12.0,
        "pending_memory_mib": 24576.0,
        "pending_gpu": 0.0,
        **extra,
    }


def _revision_0006() -> list[tuple[type, dict]]:
    return [(ClusterStateRow, _cluster("prometheus"))]


def _revision_0007() -> list[tuple[type, dict]]:
    return [(NodeSampleRow, _node_sample(2, 1, 6, step_time_s=0.25))]


def _revision_0008() -> list[tuple[type, dict]]:
    return [(ClusterStateRow, _cluster("volcano", queued_jobs=7))]


def _revision_0009() -> list[tuple[type, dict]]:
    bounds = {"worker": RoleBounds(min_count=2, max_count=8)}
    return [(JobRow, _job(2, "j2", status="running", finished_at=None, role_bounds=bounds))]


def _revision_0011() -> list[tuple[type, dict]]:
    summary = dict(_revision_0002()[0][1], job_id=2, uid="j2", name="train-j2", namespace="ml")
    return [(JobSummaryRow, summary)]


def _revision_0012() -> list[tuple[type, dict]]:
    # A uid held in a second namespace (unique per namespace from 0012 on).
    return [(JobRow, _job(9, "j1", namespace="research"))]


def _revision_0013() -> list[tuple[type, dict]]:
    # A summary with the savings replay's figures.
    hours = (
        "node_hours", "requested_core_hours", "used_core_hours", "brain_core_hours",
        "requested_gib_hours", "used_gib_hours", "brain_gib_hours", "requested_gpu_hours",
        "used_gpu_hours", "brain_gpu_hours", "replayed_node_hours",
    )  # fmt: skip
    summary = dict(
        _revision_0002()[0][1],
        job_id=9,
        uid="j1",
        name="train-j1",
        namespace="research",
        savings_computed_at=_at(70),
        savings_brain_ooms=1,
        **{f"savings_{name}": 10.0 + n for n, name in enumerate(hours)},
    )
    return [(JobSummaryRow, summary)]


def _revision_0014() -> list[tuple[type, dict]]:
    # A job discovery found in the cluster's metrics.
    return [(JobRow, _job(10, "ctr-train", namespace="ml-a", kind="ElasticJob", discovered=True))]


def _revision_0015() -> list[tuple[type, dict]]:
    # A job an unrestricted caller registered: vouched for.
    return [(JobRow, _job(11, "j11", vouched_at=_at(5)))]


def _revision_0018() -> list[tuple[type, dict]]:
    # A node Brain learned from samples, no master registering it.
    return [(NodeRow, {**_node(3, 1, "ps", 1), "status": "running", "learned": True})]


# What each revision lets a deployment store (revisions that changed no data: none).
ROWS_OF: dict[str, Callable[[], list[tuple[type, dict]]]] = {
    "0001": _revision_0001,
    "0002": _revision_0002,
    "0003": _revision_0003,
    "0004": _revision_0004,
    "0005": _revision_0005,
    "0006": _revision_0006,
    "0007": _revision_0007,
    "0008": _revision_0008,
    "0009": _revision_0009,
    "0011": _revision_0011,
    "0012": _revision_0012,
    "0013": _revision_0013,
    "0014": _revision_0014,
    "0015": _revision_0015,
    # 0016's one row is the migration's own; 0017's rows are its summaries' days, which
    # it writes itself (test_the_upgrade_splits_every_stored_summary_by_day).
    "0016": lambda: [],
    "0017": lambda: [],
    "0018": _revision_0018,
}


def _revisions() -> list[str]:
    """Every revision, oldest first."""
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    return [revision.revision for revision in reversed(list(script.walk_revisions()))]


def _earlier_revisions() -> list[str]:
    return _revisions()[:-1]


def _shaped(model: type, columns: list[str]):
    """A table of just these columns, typed as the model types them (timestamps as UTC,
    JSON documents as their domain objects), with none of the model's defaults: a
    revision's table may lack the model's newer columns."""
    model_table = Base.metadata.tables[model.__tablename__]
    return table(model.__tablename__, *(column(name, model_table.c[name].type) for name in columns))


def _store(conn: Connection, rows: list[tuple[type, dict]]) -> None:
    for model, row in rows:
        conn.execute(insert(_shaped(model, list(row))).values(**row))


def _primary_key(model: type, row: dict) -> dict:
    return {c.name: row[c.name] for c in Base.metadata.tables[model.__tablename__].primary_key}


def _read(conn: Connection, model: type, row: dict) -> dict:
    shaped = _shaped(model, list(row))
    where = [shaped.c[name] == value for name, value in _primary_key(model, row).items()]
    found = conn.execute(select(shaped).where(*where)).mappings().all()
    assert len(found) == 1, (model.__tablename__, _primary_key(model, row))
    return dict(found[0])


@pytest.fixture(params=URL_KINDS)
def new_database(request, tmp_path) -> Callable[[], str]:
    if request.param == "sqlite":
        counter = iter(range(1000))
        return lambda: f"sqlite:///{tmp_path / f'upgrade-{next(counter)}.db'}"
    return request.getfixturevalue("make_pg_database")


def test_every_revision_that_stores_data_has_rows_here():
    """A new migration that adds a table or column should add rows here too; a revision
    unknown to this test fails it, so nobody forgets."""
    known = set(ROWS_OF) | {"0010"}  # 0010 only added an index
    assert set(_revisions()) <= known | {_revisions()[-1]}


@pytest.mark.parametrize("start", _earlier_revisions())
def test_upgrade_from_a_populated_database_at_each_revision_keeps_every_value(new_database, start):
    url = new_database()
    stored: list[tuple[type, dict]] = []
    engine = make_engine(url)
    try:
        for revision in _revisions()[: _revisions().index(start) + 1]:
            migrate.upgrade(url, revision)
            rows = ROWS_OF.get(revision, lambda: [])()
            with engine.begin() as conn:
                _store(conn, rows)
            stored += rows
        assert migrate.current_revision(engine) == start
    finally:
        engine.dispose()

    migrate.upgrade(url)  # `brain db upgrade`, from `start` to head in one go

    engine = make_engine(url)
    try:
        assert migrate.current_revision(engine) == migrate.head_revision(url)
        with engine.connect() as conn:
            for model, row in stored:
                assert _read(conn, model, row) == row, model.__tablename__
            # Rows stored before a column existed read as the current code expects.
            for model in {model for model, _ in stored}:
                assert len(conn.execute(select(model)).all()) == sum(
                    1 for m, _ in stored if m is model
                )
    finally:
        engine.dispose()


def test_after_the_upgrade_a_uid_is_unique_per_namespace(new_database):
    """From 0011 (uids unique across namespaces) with data: j1 and j2 of namespace ml
    stay, another namespace may then take j1, ml may not take it twice, nor may two jobs
    without a namespace share a uid."""
    url = new_database()
    previous = "0011"
    engine = make_engine(url)
    try:
        for revision in _revisions()[: _revisions().index(previous) + 1]:
            migrate.upgrade(url, revision)
            with engine.begin() as conn:
                _store(conn, ROWS_OF.get(revision, lambda: [])())
        migrate.upgrade(url)
        with engine.begin() as conn:
            _store(conn, [(JobRow, _job(3, "j1", namespace="team-b"))])
            _store(conn, [(JobRow, _job(4, "solo", namespace=None))])
        for taken in (_job(5, "j1"), _job(6, "solo", namespace=None)):
            with pytest.raises(IntegrityError), engine.begin() as conn:
                _store(conn, [(JobRow, taken)])
        with engine.connect() as conn:
            jobs = conn.execute(select(JobRow.id, JobRow.uid, JobRow.namespace).order_by(JobRow.id))
            assert [tuple(row) for row in jobs] == [
                (1, "j1", "ml"),
                (2, "j2", "ml"),
                (3, "j1", "team-b"),
                (4, "solo", None),
            ]
            # the rebuilt table kept what referenced it (SQLite copies it)
            assert len(conn.execute(select(NodeRow.id)).all()) == 2
    finally:
        engine.dispose()


def test_the_upgrade_splits_every_stored_summary_by_day(new_database):
    """0017 writes the day rows of the summaries stored before it, as a summary written
    now gets them: j1 (08:01 to 09:00) keeps its 20 core-hours asked on 2026-03-01; j12,
    8 hours from 20:00 to 04:00 the next day, holds 10 on each day, and the job itself
    on the day it ended."""
    url = new_database()
    migrate.upgrade(url, "0016")
    evening = _at(12 * 60)
    across = _summary(
        12,
        "j12",
        started_at=evening,
        ended_at=evening + timedelta(hours=8),
        run_seconds=8 * 3600.0,
        namespace="ml",
    )
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            _store(conn, [(JobRow, _job(1, "j1")), (JobSummaryRow, _summary(1, "j1"))])
            _store(conn, [(JobRow, _job(12, "j12")), (JobSummaryRow, across)])
        migrate.upgrade(url)
        with make_session_factory(engine)() as session:
            stored = session.scalars(
                select(JobUsageDayRow).order_by(JobUsageDayRow.job_id, JobUsageDayRow.day)
            ).all()
            assert [(r.job_id, r.day.day, r.requested_core_hours, r.jobs) for r in stored] == [
                (1, 1, 20.0, 1),
                (12, 1, 10.0, 0),
                (12, 2, 10.0, 1),
            ]
            summaries = session.scalars(select(JobSummaryRow).order_by(JobSummaryRow.job_id))
            written_now = [row for summary in summaries for row in day_rows(summary)]
            columns = [a.key for a in JobUsageDayRow.__mapper__.column_attrs]
            assert [{c: getattr(r, c) for c in columns} for r in stored] == written_now
    finally:
        engine.dispose()


def test_nodes_stored_before_read_as_registered_and_keep_their_status(new_database):
    """0018: Brain cannot tell which stored node a master registered, so none counts as
    learned (none goes silent), and a node learned from now on does."""
    url = new_database()
    migrate.upgrade(url, "0017")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            _store(conn, [(JobRow, _job(1, "j1")), (NodeRow, _node(1, 1, "ps", 0))])
        migrate.upgrade(url)
        with engine.begin() as conn:
            _store(conn, [(NodeRow, {**_node(2, 1, "ps", 1), "learned": True})])
        with make_session_factory(engine)() as session:
            stored = session.execute(select(NodeRow.id, NodeRow.learned).order_by(NodeRow.id))
            assert stored.all() == [(1, False), (2, True)]
    finally:
        engine.dispose()
