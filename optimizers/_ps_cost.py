"""The PS tier's CPU per global step over the sample window, and whether it grows.

A tier's core-seconds per step stay flat at one configuration unless something changes
what a step costs: a PS past its knee (more cores that mostly spin) or a model whose
load per step grows (embeddings that fill up). ps_scaling tells the two apart before it
counts on a knee; worker_tuning does not make workers smaller for one more PS against a
load that grows, where ps_scaling's trades follow it.
"""

from __future__ import annotations

from statistics import median

from brain.domain import ROLE_PS
from brain.optimizing import OptimizerContext
from brain.optimizing.speed_points import STALL_SHARE

# A cost per step this many times what it was half a configuration's time before: a
# load that grows per step.
COST_GROWTH = 1.05


def cost_ratios(context: OptimizerContext) -> list[tuple]:
    """``(time, PS core-seconds per global step)`` over today's sample window, oldest
    first: the tier's CPU use over the speed at the same time. A time is left out when the
    speed stalled (below ``STALL_SHARE`` of its median at the same worker count) or a
    node sampled then is unknown (the tier's use then is not all known). Removed PS count:
    before a plan cut the tier they carried their part of it."""
    known = (*context.nodes, *context.failed_nodes, *context.gone_nodes)
    ps = {n.name for n in known if n.role == ROLE_PS}
    names = {n.name for n in known}
    use: dict = {}
    unknown: set = set()
    for s in context.samples:
        if s.node not in names:
            unknown.add(s.ts)
        elif s.node in ps:
            use[s.ts] = use.get(s.ts, 0.0) + s.cpu
    by_workers: dict[int, list[float]] = {}
    for s in context.speed:
        by_workers.setdefault(s.workers, []).append(s.steps_per_sec)
    typical = {workers: median(speeds) for workers, speeds in by_workers.items()}
    speed = {
        s.ts: s.steps_per_sec
        for s in context.speed
        if s.steps_per_sec > 0 and s.steps_per_sec >= STALL_SHARE * typical[s.workers]
    }
    return sorted(
        (ts, cpu / speed[ts]) for ts, cpu in use.items() if ts in speed and ts not in unknown
    )


def cost_growing(context: OptimizerContext, ratios: list[tuple]) -> bool:
    """The tier's cost per step (``ratios``, ``cost_ratios``) rose by ``COST_GROWTH``
    from the first half of the time since the newest applied plan to the second (at least
    four times in each): a load that grows per step, not a knee, made it dearer than it
    once was."""
    since = max((p.applied_at for p in context.plans if p.applied_at is not None), default=None)
    costs = [cost for ts, cost in ratios if since is None or ts >= since]
    half = len(costs) // 2
    if half < 4:
        return False
    return median(costs[-half:]) > COST_GROWTH * median(costs[:half])
