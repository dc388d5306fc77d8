"""Finished jobs in the database as a site's history: stored through the services with
one sample a minute per node and summarized as the service does when a job ends, for
``brain.replay.db_source`` and ``brain backtest --from-db``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from brain.domain import RoleSpec
from brain.services.samples import NodePoint, ingest
from brain.summaries import summarize_job
from tests.builders import make_job

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
PS_JOB_ROLES = {
    "ps": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=2, cpu=8, memory_mib=16384),
}


def database_url(engine) -> str:
    return engine.url.render_as_string(hide_password=False)


def add_job(
    engine,
    uid: str,
    usage: dict[str, list[tuple[float, float]]],
    *,
    roles: dict | None = None,
    group: str = "alice/ctr",
    user: str = "alice",
    status: str = "succeeded",
    start: datetime = T0,
    hours: float = 2.0,
    started: bool = True,
    gpu: dict[str, list[tuple[float, float, float]]] | None = None,
) -> None:
    """A job whose nodes (``<role>-<index>``) used ``usage`` (cpu, memory_mib) one sample a
    minute, summarized as the service does when it ends."""
    with Session(engine) as session:
        job = make_job(
            session,
            uid,
            name=uid.rsplit("-", 1)[0],
            user=user,
            dataset=None,
            group_key=group,
            roles=PS_JOB_ROLES if roles is None else roles,
            status=status,
            created_at=start - timedelta(minutes=5),
            start=start,
            started=started,
            hours=hours,
        )
        points = []
        for node, samples in usage.items():
            role, index = node.rsplit("-", 1)
            for i, (cpu, memory) in enumerate(samples):
                extra = gpu[node][i] if gpu and node in gpu else (None, None, None)
                points.append(
                    NodePoint(
                        node,
                        role,
                        int(index),
                        start + timedelta(minutes=i),
                        float(cpu),
                        float(memory),
                        *extra,
                    )
                )
        ingest(session, job, points, [])
        summarize_job(session, job)
        session.commit()


def ps_job(engine, uid: str, **kwargs) -> None:
    """Two workers: per node CPU p95 7.4 and 2 (pooled: 5.85); one PS using little."""
    add_job(
        engine,
        uid,
        {
            "worker-0": [(1, 100), (1, 100), (1, 100), (1, 100), (9, 100)],
            "worker-1": [(2, 300), (2, 300), (2, 300), (2, 300), (2, 500)],
            "ps-0": [(0.5, 50)] * 5,
        },
        **kwargs,
    )
