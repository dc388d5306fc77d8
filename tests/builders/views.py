"""Small builders for optimizer contexts; every value not given is a harmless default."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from brain.domain import (
    JobStatus,
    Limits,
    PlanStatus,
    Resources,
    RoleBounds,
    RoleSpec,
    Stage,
    Strategy,
)
from brain.optimizing import (
    EventView,
    HistoricalJob,
    JobView,
    NodeChange,
    NodeSample,
    NodeUsage,
    NodeView,
    OptimizerContext,
    PlanView,
    Reason,
    SpeedSample,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def job(
    *,
    uid: str = "job-1",
    strategy: Strategy = Strategy.ps,
    roles: dict[str, RoleSpec] | None = None,
    limits: Limits | None = None,
    gpu_type: str | None = None,
    total_steps: int | None = None,
    duration_s: float | None = None,
    bounds: dict[str, RoleBounds] | None = None,
    namespace: str | None = None,
) -> JobView:
    started = NOW - timedelta(hours=2)
    return JobView(
        uid=uid,
        name=uid,
        user="alice",
        dataset="clicks",
        group_key="alice/clicks",
        strategy=strategy,
        status=JobStatus.running if duration_s is None else JobStatus.succeeded,
        limits=limits or Limits(),
        roles=roles or {},
        gpu_type=gpu_type,
        total_steps=total_steps,
        started_at=started,
        finished_at=None if duration_s is None else started + timedelta(seconds=duration_s),
        bounds=bounds or {},
        namespace=namespace,
    )


def node(
    name: str, role: str, cpu: float, memory_mib: float, gpu: float = 0.0, index: int = 0
) -> NodeView:
    return NodeView(name=name, role=role, index=index, cpu=cpu, memory_mib=memory_mib, gpu=gpu)


def series(
    node_name: str,
    cpu: Sequence[float] | None = None,
    memory_mib: Sequence[float] | None = None,
    every_s: float = 60,
) -> list[NodeSample]:
    """Samples ``every_s`` apart, the last one taken at ``NOW``."""
    n = len(cpu if cpu is not None else memory_mib)
    cpu = cpu if cpu is not None else [1.0] * n
    memory_mib = memory_mib if memory_mib is not None else [1024.0] * n
    return [
        NodeSample(
            node=node_name,
            ts=NOW - timedelta(seconds=every_s * (n - 1 - i)),
            cpu=cpu[i],
            memory_mib=memory_mib[i],
        )
        for i in range(n)
    ]


def speeds(
    points: Sequence[tuple[int, float]], every_s: float = 60, first_step: int = 0
) -> list[SpeedSample]:
    """Speed samples from ``(workers, steps_per_sec)`` pairs, the last one at ``NOW``."""
    n = len(points)
    return [
        SpeedSample(
            ts=NOW - timedelta(seconds=every_s * (n - 1 - i)),
            global_step=first_step + i * 100,
            steps_per_sec=sps,
            workers=workers,
        )
        for i, (workers, sps) in enumerate(points)
    ]


def usage(
    name: str,
    role: str,
    *,
    cpu_mean: float = 1.0,
    cpu_max: float = 1.0,
    memory_max_mib: float = 1024.0,
    gpu_util_mean: float | None = None,
    gpu_memory_util_max: float | None = None,
    gpu: float = 0.0,
) -> NodeUsage:
    """Usage of a historical node that requested ``gpu`` GPUs; GPU memory utilization is
    expressed over a 1000 MiB GPU."""
    return NodeUsage(
        name=name,
        role=role,
        requested=Resources(gpu=gpu),
        cpu_mean=cpu_mean,
        cpu_max=cpu_max,
        cpu_p95=cpu_max,
        memory_mean_mib=memory_max_mib,
        memory_max_mib=memory_max_mib,
        gpu_util_mean=gpu_util_mean,
        gpu_memory_max_mib=None if gpu_memory_util_max is None else gpu_memory_util_max * 1000,
        gpu_memory_total_mib=None if gpu_memory_util_max is None else 1000.0,
    )


def past_run(
    uid: str,
    nodes: Sequence[NodeUsage],
    *,
    gpu_type: str | None = None,
    duration_s: float = 3600,
    strategy: Strategy = Strategy.ps,
) -> HistoricalJob:
    return HistoricalJob(
        job=job(uid=uid, gpu_type=gpu_type, duration_s=duration_s, strategy=strategy),
        nodes=tuple(nodes),
    )


def oom(event_id: int, node_name: str, minutes_ago: float = 1) -> EventView:
    return EventView(
        id=event_id, ts=NOW - timedelta(minutes=minutes_ago), kind="oom", node=node_name
    )


def plan(
    *,
    status: PlanStatus = PlanStatus.applied,
    seconds_ago: float = 3600,
    roles: dict[str, RoleSpec] | None = None,
    source_event_id: int | None = None,
    stage: Stage = Stage.running,
    migrate: tuple[NodeChange, ...] = (),
    plan_id: int = 1,
    reasons: tuple[Reason, ...] = (),
) -> PlanView:
    """A plan created ``seconds_ago``; applied then too when its status is applied."""
    created = NOW - timedelta(seconds=seconds_ago)
    return PlanView(
        id=plan_id,
        stage=stage,
        status=status,
        created_at=created,
        roles=roles or {},
        migrate=migrate,
        source_event_id=source_event_id,
        applied_at=created if status == PlanStatus.applied else None,
        reasons=reasons,
    )


def context(stage: Stage, the_job: JobView | None = None, **kwargs) -> OptimizerContext:
    kwargs.setdefault("now", NOW)
    return OptimizerContext(stage=stage, job=the_job or job(), **kwargs)
