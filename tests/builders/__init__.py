"""Where tests build their data, one package. This module builds jobs: request bodies
for the API (``job_body``, ``node_point``), jobs recorded through the API (``record_run``,
``hot_ps_job``), jobs stored through the services with nodes, samples, events and plans
(``make_job`` and the ``add_*`` helpers, ``hand_job``, ``flat_job``); and API tokens
(``token_secret``) with the header that presents one (``bearer``). ``views`` builds what
optimizers see (jobs, nodes, samples, plans, contexts), ``optimizers`` holds stand-in
optimizers, ``traces`` builds traces of runs for the replay, the backtest and the learned
models, ``db_runs`` finished and summarized jobs as the database's runs to replay,
``tenancy`` two teams' tokens, runs and plans, ``dlrover`` DLRover's master objects and
the jobs the drop-in tests give it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from brain.db.engine import make_session_factory
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import RoleSpec, utcnow
from brain.optimizing.proposal import PlanBody
from brain.services import events, jobs, nodes, samples
from brain.services.tokens import TokenScope, create_token


def job_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "ctr-train",
        "user": "alice",
        "dataset": "clicks-2026",
        "strategy": "ps",
        "limits": {"cpu": 64, "memory_mib": 262144},
        "roles": {
            "ps": {"count": 2, "cpu": 8, "memory_mib": 16384},
            "worker": {"count": 4, "cpu": 4, "memory_mib": 8192},
        },
        "total_steps": 100000,
    }
    body.update(overrides)
    return body


def node_point(name: str, ts: str, cpu: float, memory_mib: float, **extra: Any) -> dict[str, Any]:
    role, index = name.rsplit("-", 2)[-2:]
    return {
        "name": name,
        "role": role,
        "index": int(index),
        "ts": ts,
        "cpu": cpu,
        "memory_mib": memory_mib,
        **extra,
    }


def record_run(
    client: Any,
    uid: str,
    body: dict[str, Any],
    usage: dict[str, tuple[float, float]],
    *,
    start: datetime,
    sample_minutes: Iterable[float],
    finished_minutes: float,
    headers: dict[str, str] | None = None,
) -> None:
    """A run recorded through the API as a job master records it: the job ``body``
    registered running from ``start``, each node of ``usage`` (pod name -> cpu cores,
    memory MiB) sampled at each of ``sample_minutes``, then succeeded at
    ``finished_minutes``. Each call must succeed."""
    running = {**body, "status": "running", "started_at": start.isoformat()}
    response = client.put(f"/api/v1/jobs/{uid}", json=running, headers=headers)
    assert response.status_code == 201, response.text
    points = [
        node_point(name, (start + timedelta(minutes=m)).isoformat(), cpu, memory_mib)
        for name, (cpu, memory_mib) in usage.items()
        for m in sample_minutes
    ]
    response = client.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": points}, headers=headers)
    assert response.status_code == 200, response.text
    end = start + timedelta(minutes=finished_minutes)
    finish = {"status": "succeeded", "finished_at": end.isoformat()}
    response = client.patch(f"/api/v1/jobs/{uid}", json=finish, headers=headers)
    assert response.status_code == 200, response.text


def hot_ps_job(client: Any, uid: str = "j", **job: Any) -> None:
    """A running job (``job_body`` with ``job``'s fields) of 2 PS and 2 workers whose ps-0
    is hot: it uses 3.6 (x 6), 3.7, 3.8 of its 4 cores in 8 samples 15 s apart (each >= 0.8
    x 4 = 3.2; hot_ps needs 8) while ps-1 uses 1.0, so every running-stage optimize
    proposes to move ps-0."""
    roles = {
        "ps": {"count": 2, "cpu": 4, "memory_mib": 16384},
        "worker": {"count": 2, "cpu": 4, "memory_mib": 8192},
    }
    response = client.put(
        f"/api/v1/jobs/{uid}", json=job_body(roles=roles, status="running", **job)
    )
    assert response.status_code in (200, 201), response.text
    nodes = []
    for i, cpu in enumerate((3.6, 3.6, 3.6, 3.6, 3.6, 3.6, 3.7, 3.8)):
        ts = f"2026-03-01T00:{15 * i // 60:02d}:{15 * i % 60:02d}Z"
        nodes += [
            node_point(f"{uid}-edljob-ps-0", ts, cpu, 9000),
            node_point(f"{uid}-edljob-ps-1", ts, 1.0, 9000),
        ]
    response = client.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": nodes})
    assert response.status_code == 200, response.text


def recent_hour(days_ago: float = 3) -> datetime:
    """A whole hour a few days back: inside every default window, clear of the future."""
    return (utcnow() - timedelta(days=days_ago)).replace(minute=0, second=0, microsecond=0)


def at(t0: datetime, minutes: float) -> datetime:
    return t0 + timedelta(minutes=minutes)


def make_job(
    session: Session,
    uid: str,
    *,
    start: datetime,
    hours: float | None = 1.0,
    user: str = "alice",
    name: str = "resnet",
    dataset: str | None = "imagenet",
    group_key: str | None = None,
    status: str = "succeeded",
    strategy: str = "ps",
    gpu_type: str | None = None,
    namespace: str | None = None,
    roles: dict | None = None,
    created_at: datetime | None = None,
    started: bool = True,
) -> JobRow:
    """A job started at ``start`` (unless not ``started``); a finished one ends ``hours``
    later (``hours=None``: its end is not recorded)."""
    finished = status in ("succeeded", "failed", "stopped") and hours is not None
    job, _ = jobs.upsert_job(
        session,
        uid,
        jobs.JobInput(
            name=name,
            user=user,
            dataset=dataset,
            group_key=group_key,
            status=status,
            strategy=strategy,
            gpu_type=gpu_type,
            namespace=namespace,
            roles=roles or {},
            created_at=created_at,
            started_at=start if started else None,
            finished_at=start + timedelta(hours=hours) if finished else None,
        ),
    )
    return job


def add_node(
    session: Session,
    job: JobRow,
    name: str,
    role: str,
    *,
    created_at: datetime,
    cpu: float,
    memory_mib: float,
    gpu: float = 0.0,
) -> None:
    index = int(name.rsplit("-", 1)[-1])
    nodes.upsert_node(
        session,
        job,
        name,
        nodes.NodeInput(
            role=role, index=index, cpu=cpu, memory_mib=memory_mib, gpu=gpu, created_at=created_at
        ),
    )


def add_points(session: Session, job: JobRow, name: str, role: str, points: list[dict]) -> None:
    """Node samples: each point a dict with ts, cpu, memory_mib and optional GPU fields."""
    index = int(name.rsplit("-", 1)[-1])
    samples.ingest(
        session,
        job,
        [samples.NodePoint(name=name, role=role, index=index, **p) for p in points],
        [],
    )


def add_speed(session: Session, job: JobRow, points: list[tuple[datetime, float, int]]) -> None:
    speed = [samples.SpeedPoint(ts, i * 100, sps, w) for i, (ts, sps, w) in enumerate(points)]
    samples.ingest(session, job, [], speed)


def add_event(session: Session, job: JobRow, ts: datetime, kind: str, node: str | None) -> None:
    events.record_events(session, job, [events.EventInput(ts=ts, kind=kind, node=node)])


def add_applied_plan(session: Session, job: JobRow, applied_at: datetime, optimizer: str) -> None:
    session.add(
        ScalePlanRow(
            job_id=job.id,
            stage="running",
            status="applied",
            body=PlanBody(optimizers=[optimizer]),
            created_at=applied_at,
            updated_at=applied_at,
        )
    )
    session.flush()


def hand_job(session: Session, uid: str = "hand-1", t0: datetime | None = None) -> JobRow:
    """The small job whose summary ``test_compute`` works out by hand.

    10:00-11:00 (t0 = 10:00). ps-0: 4 cores, 8192 MiB from 10:00. worker-0: 8 cores,
    16384 MiB, 1 GPU from 10:00. worker-1: the same, registered at 10:30.
    """
    t0 = t0 or recent_hour()
    job = make_job(
        session,
        uid,
        start=t0,
        roles={
            "ps": RoleSpec(count=1, cpu=4, memory_mib=8192, gpu=0),
            "worker": RoleSpec(count=2, cpu=8, memory_mib=16384, gpu=1),
        },
    )
    add_node(session, job, "ps-0", "ps", created_at=t0, cpu=4, memory_mib=8192)
    add_node(session, job, "worker-0", "worker", created_at=t0, cpu=8, memory_mib=16384, gpu=1)
    add_node(
        session, job, "worker-1", "worker", created_at=at(t0, 30), cpu=8, memory_mib=16384, gpu=1
    )
    add_points(
        session,
        job,
        "ps-0",
        "ps",
        [
            {"ts": at(t0, m), "cpu": c, "memory_mib": mem}
            for m, c, mem in ((0, 1, 2048), (30, 2, 4096), (60, 3, 6144))
        ],
    )
    gpu = {"gpu_memory_total_mib": 16000}
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [
            {
                "ts": at(t0, m),
                "cpu": c,
                "memory_mib": 4096,
                "gpu_util": 0.5,
                "gpu_memory_mib": gm,
                **gpu,
            }
            for m, c, gm in ((0, 2, 1000), (20, 4, 2000), (40, 6, 3000), (60, 8, 4000))
        ],
    )
    add_points(
        session,
        job,
        "worker-1",
        "worker",
        [
            {
                "ts": at(t0, 30),
                "cpu": 4,
                "memory_mib": 8192,
                "gpu_util": 1.0,
                "gpu_memory_mib": 5000,
                **gpu,
            },
            {
                "ts": at(t0, 60),
                "cpu": 6,
                "memory_mib": 8192,
                "gpu_util": 0.0,
                "gpu_memory_mib": 5000,
                **gpu,
            },
        ],
    )
    add_speed(
        session,
        job,
        [(at(t0, 0), 10, 1), (at(t0, 20), 10, 1), (at(t0, 40), 20, 2), (at(t0, 60), 20, 2)],
    )
    add_event(session, job, at(t0, 45), "oom", "worker-1")
    add_event(session, job, at(t0, 50), "failed", "worker-0")
    add_applied_plan(session, job, at(t0, 30), "worker_tuning")
    return job


def flat_job(
    session: Session,
    uid: str,
    *,
    start: datetime,
    cpu_request: float,
    cpu_used: float,
    hours: float = 1.0,
    gpu: float = 0.0,
    gpu_util: float | None = None,
    status: str = "succeeded",
    **keys,
) -> JobRow:
    """One node, 1024 MiB requested and 512 MiB used, constant usage from start to end.

    So requested core-hours = cpu_request × hours, used = cpu_used × hours, GiB-hours
    1 × hours requested and 0.5 × hours used, GPU-hours gpu × hours and gpu_util × gpu ×
    hours.
    """
    job = make_job(session, uid, start=start, hours=hours, status=status, **keys)
    add_node(
        session,
        job,
        "worker-0",
        "worker",
        created_at=start,
        cpu=cpu_request,
        memory_mib=1024,
        gpu=gpu,
    )
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [
            {
                "ts": start + timedelta(hours=h),
                "cpu": cpu_used,
                "memory_mib": 512,
                "gpu_util": gpu_util,
            }
            for h in (0, hours)
        ],
    )
    return job


def token_secret(
    db: Engine,
    name: str,
    scope: str,
    namespaces: list[str] | None = None,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> str:
    """A token created (and committed) in the database of ``db``; its secret."""
    with make_session_factory(db)() as session:
        new = create_token(session, name, TokenScope(scope), namespaces, expires_at, now)
        session.commit()
        return new.secret


def bearer(secret: str) -> dict[str, str]:
    """The request headers that present a token's secret."""
    return {"Authorization": f"Bearer {secret}"}
