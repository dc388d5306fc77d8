"""Adding workers step by step while the PS have headroom and training gets faster."""

from __future__ import annotations

from itertools import groupby
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import OptimizerContext, PlanView, Proposal, SpeedSample
from brain.optimizing.guard import current_role, effective_roles, exceeded_limits, role_totals
from optimizers._common import mean, no_change, reason

NAME = "worker_tuning"


class WorkerTuningSettings(BaseModel):
    ps_cpu_threshold: float = Field(
        0.8,
        ge=0.1,
        le=1.0,
        description="Busiest PS CPU used / requested below which workers may be added.",
    )
    ps_samples: int = Field(
        3, ge=1, le=100, description="Recent samples per PS averaged for its CPU use."
    )
    step: int = Field(2, ge=1, le=64, description="Most workers added by one plan.")
    min_speed_gain: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="Relative speed gain the last addition must have brought for another one.",
    )
    min_speed_samples: int = Field(
        3,
        ge=1,
        le=1000,
        description="Speed samples needed at the current worker count to judge it.",
    )
    cooldown_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="No worker change within this many seconds of an applied one.",
    )


class WorkerTuningOptimizer:
    """Adds up to ``step`` workers while the busiest PS has CPU headroom and adding helps.

    It stops when the busiest PS reaches ``ps_cpu_threshold`` of its CPU request, when
    the mean speed at the current worker count is not ``min_speed_gain`` above the mean
    at the previous (smaller) count, or when the job's limits are reached. Worker counts
    are compared as ``SpeedSample.workers`` reports them; the proposal sets the
    ``worker`` role count. No change within ``cooldown_s`` of an applied plan that
    changed workers (timed by the plan's ``created_at``).
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    Settings: ClassVar[type[WorkerTuningSettings]] = WorkerTuningSettings

    def propose(self, context: OptimizerContext, settings: WorkerTuningSettings) -> Proposal:
        last_change = max(
            (
                p.created_at
                for p in context.plans
                if p.status == PlanStatus.applied and _changes_workers(p)
            ),
            default=None,
        )
        if last_change is not None:
            elapsed = (context.now - last_change).total_seconds()
            if elapsed < settings.cooldown_s:
                return no_change(
                    NAME,
                    f"workers changed {elapsed:.0f} s ago, "
                    f"cooling down for {settings.cooldown_s:.0f} s",
                    {"seconds_since_change": elapsed},
                    {"cooldown_s": settings.cooldown_s},
                )

        ps_load = _busiest_ps(context, settings.ps_samples)
        if ps_load is None:
            return no_change(NAME, "no PS usage samples: cannot judge PS headroom")
        busiest, utilization = ps_load
        ps_evidence = {"busiest_ps": busiest, "ps_cpu_utilization": round(utilization, 3)}
        ps_threshold = {"ps_cpu_threshold": settings.ps_cpu_threshold}
        if utilization >= settings.ps_cpu_threshold:
            return no_change(
                NAME,
                f"busiest PS {busiest} at {utilization:.0%} CPU, threshold "
                f"{settings.ps_cpu_threshold:.0%}: no more workers",
                ps_evidence,
                ps_threshold,
            )

        runs = [
            (count, list(group)) for count, group in groupby(context.speed, key=lambda s: s.workers)
        ]
        if not runs or len(runs[-1][1]) < settings.min_speed_samples:
            return no_change(
                NAME,
                f"waiting for {settings.min_speed_samples} speed samples "
                "at the current worker count",
                {"speed_samples": len(runs[-1][1]) if runs else 0},
                {"min_speed_samples": settings.min_speed_samples},
            )
        speed_evidence = _speed_evidence(runs)
        gain = speed_evidence.get("speed_gain")
        if gain is not None and gain < settings.min_speed_gain:
            return no_change(
                NAME,
                f"going from {speed_evidence['previous_workers']} to {speed_evidence['workers']} "
                f"workers changed speed by {gain:.1%}, "
                f"below {settings.min_speed_gain:.0%}: stop adding",
                ps_evidence | speed_evidence,
                {"min_speed_gain": settings.min_speed_gain},
            )

        workers = current_role(ROLE_WORKER, context.job, context.nodes).count or 0
        for added in range(settings.step, 0, -1):
            roles = {ROLE_WORKER: RoleSpec(count=workers + added)}
            totals = role_totals(effective_roles(roles, context.job, context.nodes))
            if not exceeded_limits(totals, context.job.limits):
                break
        else:
            return no_change(
                NAME,
                f"one more worker would exceed the job's limits ({workers} workers now)",
                ps_evidence | {"workers": workers},
            )
        return Proposal(
            roles=roles,
            reasons=[
                reason(
                    NAME,
                    f"busiest PS {busiest} at {utilization:.0%} CPU "
                    f"(< {settings.ps_cpu_threshold:.0%}), "
                    f"speed {speed_evidence['steps_per_sec']:.2f} steps/s, gain "
                    f"{'n/a' if gain is None else f'{gain:.1%}'}: "
                    f"workers {workers} -> {workers + added}",
                    ps_evidence | speed_evidence | {"worker_count": workers, "added": added},
                    ps_threshold
                    | {"min_speed_gain": settings.min_speed_gain, "step": settings.step},
                )
            ],
        )


def _changes_workers(plan: PlanView) -> bool:
    spec = plan.roles.get(ROLE_WORKER)
    return (spec is not None and spec.count is not None) or any(
        c.role == ROLE_WORKER for c in (*plan.launch, *plan.remove)
    )


def _busiest_ps(context: OptimizerContext, samples: int) -> tuple[str, float] | None:
    """The PS with the highest mean CPU used / requested over its last samples."""
    loads = []
    for ps in context.nodes_of(ROLE_PS):
        recent = context.samples_of(ps.name)[-samples:]
        if recent and ps.cpu > 0:
            loads.append((mean([s.cpu for s in recent]) / ps.cpu, ps.name))
    if not loads:
        return None
    utilization, name = max(loads)
    return name, utilization


def _speed_evidence(runs: list[tuple[int, list[SpeedSample]]]) -> dict[str, float | int]:
    """Mean speed at the current worker count and, after an addition, the gain over the previous."""
    count, current = runs[-1]
    speed = mean([s.steps_per_sec for s in current])
    evidence: dict[str, float | int] = {"workers": count, "steps_per_sec": round(speed, 4)}
    if len(runs) > 1 and runs[-2][0] < count:
        previous = mean([s.steps_per_sec for s in runs[-2][1]])
        evidence |= {"previous_workers": runs[-2][0], "previous_steps_per_sec": round(previous, 4)}
        if previous > 0:
            evidence["speed_gain"] = (speed - previous) / previous
    return evidence
