"""Startup sizing of a new job from its related finished jobs."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import ClassVar

from pydantic import Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, RoleSpec, Stage, Strategy
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    HistoricalJob,
    OptimizerContext,
    Proposal,
)
from optimizers._common import CpuStepSettings, ceil_mib, ceil_to, mean, reason

NAME = "startup"


class StartupSettings(CpuStepSettings):
    max_history_jobs: int = Field(
        5, ge=1, le=100, description="Most recent related jobs considered."
    )
    ps_memory_margin: float = Field(
        1.2, ge=1.0, le=4.0, description="Factor applied to each PS's share of the peak PS memory."
    )
    default_ps_count: int = Field(
        1, ge=1, le=100, description="PS count without history, where the job asks none."
    )
    default_ps_cpu: float = Field(
        8.0, ge=0.1, le=256, description="PS CPU (cores) without history, where the job asks none."
    )
    default_ps_memory_mib: float = Field(
        8192,
        ge=256,
        le=1048576,
        description="PS memory (MiB) without history, where the job asks none.",
    )
    default_chief_cpu: float = Field(
        8.0,
        ge=0.1,
        le=256,
        description="Chief (or worker) CPU (cores) without history, where the job asks none.",
    )
    default_chief_memory_mib: float = Field(
        8192,
        ge=256,
        le=1048576,
        description="Chief (or worker) memory (MiB) without history, where the job asks none.",
    )


class StartupOptimizer:
    """Sizes the PS and the chief of a new job from what its related finished jobs used.

    PS: total PS CPU (sum of per-PS mean CPU) averaged over the related jobs, divided by
    the largest CPU any single PS used, gives the PS count; the peak total PS memory
    (sum of per-PS peaks, largest over jobs) is shared among them, times a margin.
    Chief: the largest CPU and memory any worker or chief used. Without history the job's
    own request stands (the guard holds it to the job's limits); the configured defaults
    fill only what it left out. Jobs without PS (allreduce) only get the chief part. It goes
    to the ``worker`` role when the job declares no chief (DLRover folds a worker into
    the chief), so no plan sizes a role the job does not have.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.create})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.create: 10}
    Settings: ClassVar[type[StartupSettings]] = StartupSettings

    def propose(self, context: OptimizerContext, settings: StartupSettings) -> Proposal:
        job = context.job
        history = list(context.history[: settings.max_history_jobs])
        proposal = Proposal()
        if job.strategy == Strategy.ps:
            _size_ps(history, settings, proposal, job.namespace, job.roles.get(ROLE_PS))
        # Without a chief replica a DLRover master makes one worker the chief, with the
        # worker size: the chief's sizing is the workers'.
        trainer = ROLE_CHIEF if ROLE_CHIEF in job.roles else ROLE_WORKER
        _size_trainer(trainer, history, settings, proposal, job.roles.get(trainer))
        return proposal


def _size_ps(
    history: list[HistoricalJob],
    settings: StartupSettings,
    proposal: Proposal,
    namespace: str | None,
    declared: RoleSpec | None,
) -> None:
    with_ps = [h for h in history if h.role_nodes(ROLE_PS)]
    ps_cpu_peak = max((n.cpu_max for h in with_ps for n in h.role_nodes(ROLE_PS)), default=0.0)
    if ps_cpu_peak <= 0:
        defaults = RoleSpec(
            count=settings.default_ps_count,
            cpu=settings.default_ps_cpu,
            memory_mib=settings.default_ps_memory_mib,
        )
        spec, filled = _asked_then_defaults(declared, defaults)
        proposal.roles[ROLE_PS] = spec
        proposal.reasons.append(
            reason(
                NAME,
                f"no related job with PS usage among {len(history)} considered: "
                f"{_kept_the_ask(ROLE_PS, spec, filled)}",
                evidence={"related_jobs": len(history), "defaults_for": filled},
                threshold={
                    "default_ps_count": settings.default_ps_count,
                    "default_ps_cpu": settings.default_ps_cpu,
                    "default_ps_memory_mib": settings.default_ps_memory_mib,
                },
            )
        )
        return
    # Per job: CPU is the sum of PS means (steady load), memory the sum of PS peaks.
    job_cpu = [sum(n.cpu_mean for n in h.role_nodes(ROLE_PS)) for h in with_ps]
    job_mem = [sum(n.memory_max_mib for n in h.role_nodes(ROLE_PS)) for h in with_ps]
    total_ps_cpu, total_ps_mem = mean(job_cpu), max(job_mem)
    ps_cpu = ceil_to(ps_cpu_peak, settings.cpu_step)
    ps_count = max(math.ceil(total_ps_cpu / ps_cpu - 1e-9), 1)
    ps_memory = ceil_mib(total_ps_mem / ps_count * settings.ps_memory_margin)
    proposal.roles[ROLE_PS] = RoleSpec(count=ps_count, cpu=ps_cpu, memory_mib=ps_memory)
    proposal.reasons.append(
        reason(
            NAME,
            f"{len(with_ps)} related jobs: total PS CPU {total_ps_cpu:.2f} (mean over jobs), "
            f"single PS peak {ps_cpu_peak:.2f} -> {ps_count} PS x {ps_cpu} cores; peak total PS "
            f"memory {total_ps_mem:.0f} MiB / {ps_count} x margin {settings.ps_memory_margin} "
            f"-> {ps_memory:.0f} MiB each",
            evidence={
                # Runs of another namespace (pooled history) are not named.
                "related_jobs": [
                    h.job.uid if h.job.namespace == namespace else None for h in with_ps
                ],
                "total_ps_cpu_per_job": job_cpu,
                "total_ps_memory_mib_per_job": job_mem,
                "ps_cpu_peak": ps_cpu_peak,
            },
            threshold={"ps_memory_margin": settings.ps_memory_margin},
        )
    )


def _size_trainer(
    role: str,
    history: list[HistoricalJob],
    settings: StartupSettings,
    proposal: Proposal,
    declared: RoleSpec | None,
) -> None:
    trainers = [n for h in history for n in h.nodes if n.role in (ROLE_CHIEF, ROLE_WORKER)]
    if not trainers:
        # The job's own ask: a DLRover master puts these sizes on its workers, and nothing
        # measured says the user asked wrong (a default below the ask OOM-kills them, one
        # above it wastes what the user did not ask for).
        defaults = RoleSpec(
            cpu=settings.default_chief_cpu, memory_mib=settings.default_chief_memory_mib
        )
        asked = replace(declared or RoleSpec(), count=None, gpu=None, cpu_limit=None)
        spec, filled = _asked_then_defaults(asked, defaults)
        proposal.roles[role] = spec
        proposal.reasons.append(
            reason(
                NAME,
                f"no related job with worker usage: {_kept_the_ask(role, spec, filled)}",
                evidence={"related_jobs": len(history), "defaults_for": filled},
                threshold={
                    "default_chief_cpu": settings.default_chief_cpu,
                    "default_chief_memory_mib": settings.default_chief_memory_mib,
                },
            )
        )
        return
    cpu_peak = max(n.cpu_max for n in trainers)
    memory_peak = max(n.memory_max_mib for n in trainers)
    cpu, memory = ceil_to(cpu_peak, settings.cpu_step), ceil_mib(memory_peak)
    proposal.roles[role] = RoleSpec(cpu=cpu, memory_mib=memory)
    proposal.reasons.append(
        reason(
            NAME,
            f"largest worker usage in {len(history)} related jobs: {cpu_peak:.2f} cores, "
            f"{memory_peak:.0f} MiB -> {role} {cpu} cores, {memory:.0f} MiB",
            evidence={"cpu_max": cpu_peak, "memory_max_mib": memory_peak, "nodes": len(trainers)},
        )
    )


def _asked_then_defaults(asked: RoleSpec | None, defaults: RoleSpec) -> tuple[RoleSpec, list[str]]:
    """The job's request, each field it left out (None, or a count of 0 for a role it
    declares empty) taken from ``defaults``; and the fields so filled, in order."""
    asked = asked or RoleSpec()
    values, filled = {}, []
    for field in ("count", "cpu", "memory_mib"):
        default = getattr(defaults, field)
        if default is None:
            continue
        own = getattr(asked, field)
        if own:
            values[field] = own
        else:
            values[field] = default
            filled.append(field)
    return RoleSpec(**values), filled


def _kept_the_ask(role: str, spec: RoleSpec, filled: list[str]) -> str:
    """What a cold start gives ``role``, and whose values they are."""
    count = f"{spec.count} x " if spec.count is not None else ""
    size = f"{role} {count}{spec.cpu:g} cores, {spec.memory_mib:g} MiB"
    sized = [f for f in ("count", "cpu", "memory_mib") if getattr(spec, f) is not None]
    if not filled:
        return f"{size}, the job's own request"
    if len(filled) == len(sized):
        return f"{size}, the defaults (the job asked none of them)"
    return f"{size}, the job's request and the defaults for what it left out: {', '.join(filled)}"
