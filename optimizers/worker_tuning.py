"""Worker count: add while the PS have headroom and adding pays; take back what did not."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import (
    Changes,
    ContextInput,
    OptimizerContext,
    PlanView,
    Proposal,
    SpeedSample,
)
from brain.optimizing.proposal import GUARD
from brain.optimizing.roles import (
    current_role,
    exceeded_limits,
    planned_totals,
)
from optimizers._common import cooling_down, mean, no_change, over_limits, reason
from optimizers.estimate import NAME as ESTIMATE

NAME = "worker_tuning"
# CPU granularity of workers made smaller to fit (cores).
CPU_STEP = 0.1
# Evidence key of a take-back: the count growth past which did not pay.
TAKEN_BACK_TO = "taken_back_to"
# Evidence key of an addition that made the workers smaller to fit: their CPU before.
CPU_BEFORE = "worker_cpu_before"
# Evidence key of a step towards the estimate's worker count: not judged by its gain.
RESUMES_ESTIMATE = "resumes_estimate"


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
    worker_samples: int = Field(
        3,
        ge=1,
        le=100,
        description="Recent samples per worker averaged for the CPU the workers use (when "
        "one more worker is fitted by making them all smaller).",
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

    When the guard's step bound cut the applied estimate's worker count, it first asks
    for the rest (as many as the limits hold), a step not judged by its gain per worker.
    When one more worker of today's size would exceed the CPU limit, every worker is made
    smaller to fit one more if that adds at least ``min_speed_gain`` to the CPU the
    workers use (over their last ``worker_samples`` samples); a take-back of that
    addition restores their size.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ROLE_WORKER}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 40}
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
        last = _last_addition(context.plans)
        judged = last is None or RESUMES_ESTIMATE not in last
        if judged and per_worker is not None and per_worker < settings.min_speed_gain:
            minimum = context.job.bounds_of(ROLE_WORKER).min_count
            cpu_before = None if last is None else last.get(CPU_BEFORE)
            return _take_back(workers, minimum, speed_evidence, per_worker, settings, cpu_before)
        resumed = _resume_estimate(context, workers)
        if resumed is not None:
            return resumed

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
            if not over_limits(context, roles):
                break
        else:
            return _smaller_to_fit(context, workers, ps_evidence, speed_evidence, settings)
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
    cpu_before: float | None,
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
    # An addition that made the workers smaller to fit is taken back with their size.
    resized = "" if cpu_before is None else f", back to {cpu_before:g} cores each"
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(count=previous, cpu=cpu_before)},
        reasons=[
            reason(
                NAME,
                f"{message}: the added workers did not pay, workers {workers} -> "
                f"{previous}{resized}",
                speed_evidence | {"worker_count": workers, TAKEN_BACK_TO: previous},
                threshold,
            )
        ],
    )


def _last_addition(plans: Sequence[PlanView]) -> dict | None:
    """The evidence of worker_tuning's reason in the newest applied plan that set the
    worker count, if that plan added workers (None otherwise)."""
    applied = [
        p for p in plans if p.status == PlanStatus.applied and p.applied_at and _sets_workers(p)
    ]
    if not applied:
        return None
    newest = max(applied, key=lambda p: p.applied_at)
    for r in newest.reasons:
        if r.optimizer == NAME and "added" in r.evidence:
            return r.evidence
    return None


def _resume_estimate(context: OptimizerContext, workers: int) -> Proposal | None:
    """The rest of the way to the worker count the applied estimate planned, when the
    guard's step bound (``BRAIN_MAX_CHANGE_FACTOR``) cut it: the estimate sized the PS
    for that count, and a gain per added worker this far along is too small to measure
    against the speed's noise. As many as the limits hold; None when nothing is left."""
    estimates = [
        p
        for p in context.plans
        if p.stage == Stage.estimate and p.status == PlanStatus.applied and _sets_workers(p)
    ]
    if not estimates:
        return None
    estimate = max(estimates, key=lambda p: p.applied_at or p.created_at)
    cut = any(
        r.optimizer == GUARD and r.message.startswith(f"{ROLE_WORKER}: one plan changes")
        for r in estimate.reasons
    )
    planned = next(
        (
            r.evidence["workers"]
            for r in estimate.reasons
            if r.optimizer == ESTIMATE and isinstance(r.evidence.get("workers"), int)
        ),
        None,
    )
    if not cut or planned is None:
        return None
    # Only right after the estimate: once anything else set the count (a take-back, the
    # guard giving workers up for PS, a short cluster), the estimate no longer speaks.
    later = [
        p
        for p in context.plans
        if p.status == PlanStatus.applied
        and _sets_workers(p)
        and p.applied_at is not None
        and estimate.applied_at is not None
        and p.applied_at > estimate.applied_at
    ]
    if any(not any(RESUMES_ESTIMATE in r.evidence for r in p.reasons) for p in later):
        return None
    # The PS estimate counts the chief among its workers.
    target = planned - (1 if ROLE_CHIEF in estimate.roles else 0)
    maximum = context.job.bounds_of(ROLE_WORKER).max_count
    if maximum is not None:
        target = min(target, maximum)
    for count in range(target, workers, -1):
        roles = {ROLE_WORKER: RoleSpec(count=count)}
        if not exceeded_limits(
            planned_totals(roles, context.job, context.nodes), context.job.limits
        ):
            return Proposal(
                roles=roles,
                reasons=[
                    reason(
                        NAME,
                        f"the estimate (plan {estimate.id}) planned {target} workers and the "
                        f"step bound let {estimate.roles[ROLE_WORKER].count} through: workers "
                        f"{workers} -> {count}",
                        {
                            "worker_count": workers,
                            "added": count - workers,
                            RESUMES_ESTIMATE: target,
                        },
                    )
                ],
            )
    return None


def _smaller_to_fit(context, workers, ps_evidence, speed_evidence, settings) -> Proposal:
    """One more worker, every worker made smaller so that they fit the CPU limit, when
    that adds at least ``min_speed_gain`` to the CPU the workers use (a worker that uses
    less than its request loses nothing); else no change."""
    now = current_role(ROLE_WORKER, context.job, context.nodes)
    limit = context.job.limits.cpu
    nodes = [n for n in context.nodes_of(ROLE_WORKER) if n.cpu > 0]
    recent = [context.samples_of(n.name)[-settings.worker_samples :] for n in nodes]
    no_room = no_change(
        NAME,
        f"one more worker would exceed the job's limits ({workers} workers now)",
        ps_evidence | {"workers": workers},
    )
    if limit is None or not now.cpu or not nodes or not all(recent):
        return no_room
    used = mean([mean([s.cpu for s in samples]) for samples in recent])
    # The other roles at their nodes' own size: a PS migrated to more CPU counts as such.
    others = planned_totals({ROLE_WORKER: RoleSpec(count=0)}, context.job, context.nodes).cpu
    cpu = math.floor((limit - others) / (workers + 1) / CPU_STEP + 1e-9) * CPU_STEP
    cpu = round(min(cpu, now.cpu), 6)
    gain = (workers + 1) * min(cpu, used) / (workers * used) - 1 if used > 0 else 0.0
    roles = {ROLE_WORKER: RoleSpec(count=workers + 1, cpu=cpu)}
    if gain < settings.min_speed_gain or exceeded_limits(
        planned_totals(roles, context.job, context.nodes), context.job.limits
    ):
        return no_room
    return Proposal(
        roles=roles,
        reasons=[
            reason(
                NAME,
                f"speed {speed_evidence['steps_per_sec']:.2f} steps/s; one more worker of "
                f"{now.cpu:g} cores would exceed the CPU limit {limit:g}, so the workers, "
                f"using {used:.2f} cores each, get {cpu:g}: workers {workers} -> "
                f"{workers + 1}, {gain:+.0%} CPU in use",
                ps_evidence
                | speed_evidence
                | {
                    "worker_count": workers,
                    "added": 1,
                    "worker_cpu_used": round(used, 3),
                    CPU_BEFORE: now.cpu,
                },
                {"min_speed_gain": settings.min_speed_gain, "cpu_limit": limit},
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
