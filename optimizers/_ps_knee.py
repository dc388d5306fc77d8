"""Whether a PS moved to more cores is past its knee, judged by its CPU per step.

Below its knee a PS serves each global step of its traffic with the same core-seconds,
so the cores a move gives it turn into speed. Past it (single-threaded parts, lock
contention on hot rows) more cores mostly spin: the PS stays busy, the speed barely
grows, and its CPU used per step grows instead. hot_ps records a moved PS's cost per
step and the job's speed when it moves it; a trade of ps_scaling's may then send a PS
past its knee back to its cores from before the move, counted on for the speed it
served then, and give the cores it frees to more PS.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from brain.domain import ROLE_PS, PlanStatus
from brain.optimizing import NodeSample, NodeView, OptimizerContext, PlanView
from optimizers._common import mean

# Evidence keys of the reason that moved a PS, besides its "node" and "cpu" (its cores
# before the move): its CPU used per global step and the job's speed then.
COST_PER_STEP = "ps_cpu_per_step"
SPEED = "steps_per_sec"
# A cost per step seen before (a PS before its move, a tier's least lately) below this
# share of today's tells a knee passed since; above, it is the noise of a mean or a
# minimum over a few samples.
KNEE_COST_SHARE = 0.8
# The optimizer whose moves are judged.
MOVER = "hot_ps"


class Move(NamedTuple):
    """The plan that moved a PS, its cores before it, its CPU used per step and the
    job's speed then."""

    plan: PlanView
    cpu_before: float
    cost_per_step: float
    steps_per_sec: float


class Knee(NamedTuple):
    """A moved PS past its knee: the move, and its cost per step today."""

    move: Move
    cost_per_step: float


def _use_and_speed(
    context: OptimizerContext, samples: Sequence[NodeSample]
) -> tuple[float, float] | None:
    """A PS's mean CPU used over ``samples`` and the job's mean speed since the first of
    them; None where the speed stalled (0) in half of that time or more."""
    speeds = [s.steps_per_sec for s in context.speed if s.ts >= samples[0].ts]
    moving = [v for v in speeds if v > 0]
    if not moving or len(moving) < 0.5 * len(speeds):
        return None
    return mean([s.cpu for s in samples]), mean(moving)


def cost_per_step(context: OptimizerContext, samples: Sequence[NodeSample]) -> float | None:
    """A PS's CPU used per global step over ``samples`` (``_use_and_speed``)."""
    measured = _use_and_speed(context, samples)
    return None if measured is None else measured[0] / measured[1]


def move_evidence(context: OptimizerContext, samples: Sequence[NodeSample]) -> dict:
    """What the reason of a move records for ``last_move`` to judge it by later."""
    measured = _use_and_speed(context, samples)
    if measured is None:
        return {}
    use, speed = measured
    return {COST_PER_STEP: round(use / speed, 6), SPEED: round(speed, 3)}


def last_move(context: OptimizerContext, ps: NodeView) -> Move | None:
    """The applied plan that moved ``ps`` to its cores of today; None where a later plan
    set the PS role (the count, and so each PS's traffic, may differ) or the move recorded
    no cost."""
    applied = sorted(
        (p for p in context.plans if p.status == PlanStatus.applied and p.applied_at),
        key=lambda p: p.applied_at,
        reverse=True,
    )
    for plan in applied:
        if ROLE_PS in plan.roles:
            return None
        moved = next((c for c in plan.migrate if c.role == ROLE_PS and c.name == ps.name), None)
        if moved is None:
            continue
        evidence = next(
            (
                r.evidence
                for r in plan.reasons
                if r.optimizer == MOVER
                and r.evidence.get("node") == ps.name
                and COST_PER_STEP in r.evidence
            ),
            None,
        )
        if evidence is None or moved.cpu is None or abs(moved.cpu - ps.cpu) > 1e-6:
            return None
        return Move(plan, evidence["cpu"], evidence[COST_PER_STEP], evidence[SPEED])
    return None


def past_knee(
    context: OptimizerContext, ps: NodeView, samples: Sequence[NodeSample]
) -> Knee | None:
    """``ps``'s last move (``last_move``) when its cost per step before it is below
    ``KNEE_COST_SHARE`` of today's over ``samples``; None otherwise."""
    move = last_move(context, ps)
    cost = cost_per_step(context, samples) if samples else None
    if move is None or cost is None or move.cost_per_step >= KNEE_COST_SHARE * cost:
        return None
    return Knee(move, cost)
