"""Small helpers shared by the built-in optimizers.

Rounding convention: CPU is rounded *up* to a multiple of the optimizer's ``cpu_step``
setting (0.1 core by default) and memory *up* to whole MiB, so a rounded size never
falls below what was computed, and never below one step / 1 MiB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from brain.domain import ROLE_PS, PlanStatus, RoleSpec
from brain.optimizing import (
    NodeChange,
    NodeSample,
    NodeView,
    OptimizerContext,
    PlanView,
    Proposal,
    Reason,
)
from brain.optimizing.roles import effective_roles, exceeded_limits, role_totals

# Float noise such as 2.0000000000000004 must not push a value up one whole step.
_EPSILON = 1e-9


def cited_uid(context: OptimizerContext, uid: str, namespace: str | None) -> str | None:
    """How evidence names another job: by uid when it shares this job's namespace, else
    not at all (``None``), since whoever reads this job's plan may not read that one."""
    return uid if namespace == context.job.namespace else None


class CpuStepSettings(BaseModel):
    """Settings shared by every optimizer that sizes CPU."""

    cpu_step: float = Field(
        0.1, ge=0.01, le=4.0, description="CPU granularity in cores; sizes are rounded up to it."
    )


class PsChangeSettings(BaseModel):
    """The setting every optimizer that changes the PS tier shares."""

    ps_change_interval_s: float = Field(
        300,
        ge=0,
        le=7 * 86400,
        description="The PS tier's cooldown: no PS change within this many seconds of the "
        "last applied one (PS count or size, a PS migrated; OOM fixes excepted), time for a "
        "relaunched PS to restart and its new load to be sampled. DLRover 0.6.1 masters ask "
        "for PS changes at most once an hour whatever this says.",
    )


def ceil_to(value: float, step: float) -> float:
    """``value`` rounded up to a multiple of ``step``, at least one step."""
    steps = max(math.ceil(value / step - _EPSILON), 1)
    return round(steps * step, 6)


def floor_to(value: float, step: float) -> float:
    """``value`` rounded down to a multiple of ``step`` (0 or less when it is less than a
    step)."""
    return round(math.floor(value / step + _EPSILON) * step, 6)


def ceil_mib(value: float) -> float:
    """``value`` rounded up to whole MiB, at least 1 MiB."""
    return float(max(math.ceil(value - _EPSILON), 1))


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def reason(
    optimizer: str,
    message: str,
    evidence: dict[str, Any] | None = None,
    threshold: dict[str, Any] | None = None,
) -> Reason:
    return Reason(optimizer, message, dict(evidence or {}), dict(threshold or {}))


def no_change(
    optimizer: str,
    message: str,
    evidence: dict[str, Any] | None = None,
    threshold: dict[str, Any] | None = None,
) -> Proposal:
    """An empty proposal that still says why nothing changes."""
    return Proposal(reasons=[reason(optimizer, message, evidence, threshold)])


def over_limits(
    context: OptimizerContext, roles: dict[str, RoleSpec]
) -> dict[str, tuple[float, float]]:
    """The job's limits the job would exceed with ``roles`` planned (``{resource: (total,
    limit)}``), its other roles as they are."""
    totals = role_totals(effective_roles(roles, context.job, context.nodes))
    return exceeded_limits(totals, context.job.limits)


def too_early(
    optimizer: str,
    observed_s: float,
    ready_after_s: float,
    evidence: dict[str, Any],
    threshold: dict[str, Any],
) -> Proposal | None:
    """No change while less training than `ready_after_s` has been observed."""
    if observed_s >= ready_after_s:
        return None
    return no_change(
        optimizer,
        f"not ready: {observed_s:.0f} s of training observed, the estimate needs "
        f"{ready_after_s:.0f} s",
        evidence,
        threshold,
    )


def resized(
    node: NodeView, *, cpu: float | None = None, memory_mib: float | None = None
) -> NodeChange:
    """A migration of ``node`` to a new size; unspecified resources keep their request."""
    return NodeChange(
        role=node.role,
        name=node.name,
        cpu=node.cpu if cpu is None else cpu,
        memory_mib=node.memory_mib if memory_mib is None else memory_mib,
        gpu=node.gpu or None,
    )


def seconds_since(origin: datetime, ts: datetime) -> float:
    return (ts - origin).total_seconds()


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Least-squares ``(slope, intercept)``; ``None`` with fewer than 2 distinct ``xs``."""
    if len(set(xs)) < 2:
        return None
    # The centred closed form, not np.polyfit: polyfit's scaled solve leaves a rounding
    # slope (about 1e-16) on a flat or symmetric series, which oom_risk then read as a
    # rising trend and migrated a node that used nothing.
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    dx = x - x.mean()
    slope = float(np.dot(dx, y) / np.dot(dx, dx))  # the deviations dx sum to zero
    return slope, float(y.mean() - slope * x.mean())


def mean_cpu(samples: Sequence[NodeSample]) -> float:
    return mean([s.cpu for s in samples])


def mean_memory(samples: Sequence[NodeSample]) -> float:
    return mean([s.memory_mib for s in samples])


def applied_changes(context: OptimizerContext, touches) -> list[datetime]:
    """When applied plans for which ``touches(plan)`` holds took effect, oldest first.

    Cooldowns count from these times (the job master's ``applied_at``, on the job's clock).
    """
    return sorted(
        p.applied_at
        for p in context.plans
        if p.status == PlanStatus.applied and p.applied_at is not None and touches(p)
    )


def cooling_down(
    optimizer: str, context: OptimizerContext, touches, cooldown_s: float, what: str
) -> Proposal | None:
    """A no-change answer while the last applied change of ``what`` is younger than
    ``cooldown_s``; None once it is older (or there was none)."""
    times = applied_changes(context, touches)
    if not times:
        return None
    elapsed = (context.now - times[-1]).total_seconds()
    if elapsed >= cooldown_s:
        return None
    return no_change(
        optimizer,
        f"{what} changed {elapsed:.0f} s ago: cooling down for {cooldown_s:.0f} s",
        {"seconds_since_change": round(elapsed, 1)},
        {"cooldown_s": cooldown_s},
    )


def migrates(plan: PlanView, node: str) -> bool:
    return any(c.name == node for c in plan.migrate)


def changes_ps(plan: PlanView) -> bool:
    """An applied plan that changed the PS tier (count or size, a PS migrated), OOM fixes
    excepted: they are not elective and must never wait."""
    return (
        plan.status == PlanStatus.applied
        and plan.applied_at is not None
        and plan.source_event_id is None
        and (ROLE_PS in plan.roles or any(c.role == ROLE_PS for c in plan.migrate))
    )


def ps_changed_recently(
    optimizer: str, context: OptimizerContext, interval_s: float
) -> Proposal | None:
    """A no-change answer while the PS tier's last applied change is younger than
    ``interval_s``; None once it is older (or there was none)."""
    changes = sorted((p for p in context.plans if changes_ps(p)), key=lambda p: p.applied_at)
    if not changes:
        return None
    last = changes[-1]
    elapsed = (context.now - last.applied_at).total_seconds()
    if elapsed >= interval_s:
        return None
    return no_change(
        optimizer,
        f"the PS tier changed {elapsed:.0f} s ago (plan {last.id}): at most one PS change "
        f"per {interval_s:.0f} s",
        {"seconds_since_ps_change": round(elapsed, 1), "plan": last.id},
        {"ps_change_interval_s": interval_s},
    )
