"""Read-only optimizer views of stored rows, shared by the context and history builders."""

from __future__ import annotations

from brain.db.models import JobRow
from brain.domain import JobStatus, Limits, Strategy
from brain.optimizing.context import JobView


def job_view(job: JobRow) -> JobView:
    """The optimizer's read-only view of a stored job."""
    return JobView(
        uid=job.uid,
        name=job.name,
        user=job.user,
        dataset=job.dataset,
        group_key=job.group_key,
        strategy=Strategy(job.strategy),
        status=JobStatus(job.status),
        limits=Limits(cpu=job.limit_cpu, memory_mib=job.limit_memory_mib, gpu=job.limit_gpu),
        roles=dict(job.roles or {}),
        gpu_type=job.gpu_type,
        total_steps=job.total_steps,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        bounds=dict(job.role_bounds or {}),
        namespace=job.namespace,
    )
