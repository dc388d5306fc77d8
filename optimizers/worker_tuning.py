"""Worker count: add while the PS have headroom and adding pays; take back what did not."""

from __future__ import annotations

from itertools import groupby
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import OptimizerContext, PlanView, Proposal, SpeedSample
from brain.optimizing.guard import current_role, effective_roles, exceeded_limits, role_totals
from optimizers._common import cooling_down, mean, no_change, reason

NAME = "worker_tuning"
# Evidence key of a take-back: the count growth past which did not pay.
TAKEN_BACK_TO = "taken_back_to"


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
        description="Relative speed gain per added worker an addition must bring (2 workers "
        "at 0.05: +10 %); one that brought less is taken back after the cooldown, and the "
        "job is not grown past that count again.",
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
        description="No worker change within this many seconds of an applied one (from "
        "its applied_at, on the job's clock).",
    )


class WorkerTuningOptimizer:
    """Adds up to ``step`` workers while adding pays, and takes back an addition that did not.

    It adds while the busiest PS is below ``ps_cpu_threshold`` of its CPU request (jobs
    without PS skip that check), the job's limits allow and the worker role's
    ``max_count`` is not reached. Once an addition is judged (``min_speed_samples`` at
    the new count, after ``cooldown_s``), a speed gain per added worker below
    ``min_speed_gain`` takes the workers back to the previous count (never below
    ``min_count``), and no later plan grows past it (a ceiling read from the applied
    plans, so it outlives the speed window). No change within ``cooldown_s`` of an
    applied worker change.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    Settings: ClassVar[type[WorkerTuningSettings]] = WorkerTuningSettings

    def propose(self, context: OptimizerContext, settings: WorkerTuningSettings) -> Proposal:
        cooling = cooling_down(
            NAME, context, _sets_workers, settings.cooldown_s, "the worker count"
        )
        if cooling is not None:
            return cooling
        workers = current_role(ROLE_WORKER, context.job, context.nodes).count or 0
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
        per_worker = speed_evidence.get("speed_gain_per_worker")
        if per_worker is not None and per_worker < settings.min_speed_gain:
            minimum = context.job.bounds_of(ROLE_WORKER).min_count
            return _take_back(workers, minimum, speed_evidence, per_worker, settings)

        ps_evidence: dict[str, object] = {}
        if context.nodes_of(ROLE_PS) or ROLE_PS in context.job.roles:
            ps_load = _busiest_ps(context, settings.ps_samples)
            if ps_load is None:
                return no_change(NAME, "no PS usage samples: cannot judge PS headroom")
            busiest, utilization = ps_load
            ps_evidence = {"busiest_ps": busiest, "ps_cpu_utilization": round(utilization, 3)}
            if utilization >= settings.ps_cpu_threshold:
                return no_change(
                    NAME,
                    f"busiest PS {busiest} at {utilization:.0%} CPU, threshold "
                    f"{settings.ps_cpu_threshold:.0%}: no more workers",
                    ps_evidence,
                    {"ps_cpu_threshold": settings.ps_cpu_threshold},
                )
        ceiling = _ceiling(context.plans)
        most = settings.step if ceiling is None else min(settings.step, ceiling - workers)
        if most <= 0:
            return no_change(
                NAME,
                f"more than {ceiling} workers did not pay earlier: staying at {workers}",
                {"workers": workers, "ceiling": ceiling},
            )
        maximum = context.job.bounds_of(ROLE_WORKER).max_count
        if maximum is not None and workers + most > maximum:
            most = maximum - workers
            if most <= 0:
                return no_change(
                    NAME,
                    f"{workers} workers, the job's max_count is {maximum}: no more workers",
                    {"workers": workers},
                    {"max_count": maximum},
                )
        for added in range(most, 0, -1):
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
                    f"speed {speed_evidence['steps_per_sec']:.2f} steps/s, gain "
                    f"{'n/a' if gain is None else f'{gain:.1%}'}"
                    + (
                        f", busiest PS at {ps_evidence['ps_cpu_utilization']:.0%} CPU "
                        f"(< {settings.ps_cpu_threshold:.0%})"
                        if ps_evidence
                        else ""
                    )
                    + f": workers {workers} -> {workers + added}",
                    ps_evidence | speed_evidence | {"worker_count": workers, "added": added},
                    {
                        "ps_cpu_threshold": settings.ps_cpu_threshold,
                        "min_speed_gain": settings.min_speed_gain,
                        "step": settings.step,
                    },
                )
            ],
        )


def _take_back(
    workers: int,
    minimum: int | None,
    speed_evidence: dict,
    per_worker: float,
    settings: WorkerTuningSettings,
) -> Proposal:
    # Speed samples may count the chief too: take back what was added, from the role count.
    added = speed_evidence["workers"] - speed_evidence["previous_workers"]
    previous = max(workers - added, minimum or 0)
    message = (
        f"going from {speed_evidence['previous_workers']} to {speed_evidence['workers']} "
        f"training workers changed speed by {speed_evidence['speed_gain']:.1%}, "
        f"{per_worker:.1%} per added worker, below {settings.min_speed_gain:.0%}"
    )
    threshold = {"min_speed_gain": settings.min_speed_gain}
    if minimum is not None:
        threshold["min_count"] = minimum
    if previous >= workers:
        return no_change(
            NAME, f"{message}: the job's min_count {minimum} keeps them", speed_evidence, threshold
        )
    if previous < 1:
        return no_change(NAME, f"{message}: stop adding", speed_evidence, threshold)
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(count=previous)},
        reasons=[
            reason(
                NAME,
                f"{message}: the added workers did not pay, workers {workers} -> {previous}",
                speed_evidence | {"worker_count": workers, TAKEN_BACK_TO: previous},
                threshold,
            )
        ],
    )


def _sets_workers(plan: PlanView) -> bool:
    return ROLE_WORKER in plan.roles


def _ceiling(plans: list[PlanView] | tuple[PlanView, ...]) -> int | None:
    """The lowest worker count an applied take-back went down to: growth past it did not
    pay. Other decreases (the guard fitting limits, a role's max_count) say nothing of
    what growth pays, so they are no ceiling."""
    counts = [
        p.roles[ROLE_WORKER].count
        for p in plans
        if p.status == PlanStatus.applied
        and _sets_workers(p)
        and p.roles[ROLE_WORKER].count
        and any(r.optimizer == NAME and TAKEN_BACK_TO in r.evidence for r in p.reasons)
    ]
    return min(counts, default=None)


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
            gain = (speed - previous) / previous
            evidence["speed_gain"] = gain
            evidence["speed_gain_per_worker"] = gain / (count - runs[-2][0])
    return evidence
