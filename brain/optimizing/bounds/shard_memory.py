"""A sharded tier keeps the memory its total needs when a plan ends with fewer nodes.

Each PS holds its share of the model: the tier's memory need is a total, and a PS's
share is that total over the PS count. The optimizers size a PS's memory for the count
they plan (the estimate: the projected peak total x its margin / its count). A bound
that cuts the count (``max_count`` 8 where the estimate planned 13 PS) leaves every PS
with more than its planned share to hold, which the size planned for 13 does not: the
tier is OOM-killed. This step sizes each PS for the count the plan ends with: the total
the optimizers sized (their size per node x the count it was sized for; the tier's
requests now when they left memory alone) over the planned count, the same headroom.
Fewer PS planned without a memory size (a tier shrunk to fewer PS) gets the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.units import ceil_to
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import EPSILON, SHARDED_ROLES, current_role


def shard_memory(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each sharded role's memory per node at least the sized total over its planned
    count, when that count is below the count the memory was sized for."""
    roles, reasons = dict(proposal.roles), []
    for role in SHARDED_ROLES:
        sized = sized_total(role, view.proposed.roles.get(role), view.job, view.nodes)
        if sized is None:
            continue
        total_mib, sized_count = sized
        now = current_role(role, view.job, view.nodes)
        planned = roles.get(role, RoleSpec())
        count = planned.count if planned.count is not None else now.count
        if not count or count >= sized_count:
            continue
        need = share_mib(total_mib, count)
        memory = planned.memory_mib if planned.memory_mib is not None else now.memory_mib
        if memory is not None and memory >= need - EPSILON:
            continue
        roles[role] = replace(planned, memory_mib=need)
        reasons.append(resharded(role, sized_count, count, total_mib, memory, need))
    return replace(proposal, roles=roles), reasons


def sized_total(
    role: str, asked: RoleSpec | None, job: JobView, nodes: Sequence[NodeView]
) -> tuple[float, int] | None:
    """``(total MiB, count)``: the role's memory as the optimizers sized it, and the count
    they sized it for; None when they changed neither its count nor its memory."""
    if asked is None or (asked.count is None and asked.memory_mib is None):
        return None
    now = current_role(role, job, nodes)
    if asked.memory_mib is not None:
        count = asked.count if asked.count is not None else now.count
        return (asked.memory_mib * count, count) if count else None
    # Memory left alone: the tier's requests now hold what it needs now.
    running = [n for n in nodes if n.role == role]
    if running:
        return sum(n.memory_mib for n in running), len(running)
    if now.count and now.memory_mib:
        return now.memory_mib * now.count, now.count
    return None


def share_mib(total_mib: float, count: int) -> float:
    """One node's share of ``total_mib`` over ``count`` nodes, rounded up to 1 MiB."""
    return ceil_to(total_mib / count, 1.0)


def resharded(
    role: str, sized_count: int, count: int, total_mib: float, memory: float | None, need: float
) -> Reason:
    before = "the job's size" if memory is None else f"{memory:g} MiB"
    return Reason(
        GUARD,
        f"{role}: memory sized for {sized_count} nodes ({total_mib:g} MiB in total), the plan "
        f"runs {count}: each holds a larger share, {before} -> {need:g} MiB per node",
        evidence={
            "role": role,
            "sized_count": sized_count,
            "count": count,
            "total_memory_mib": total_mib,
            "memory_mib": memory,
            "share_mib": need,
        },
    )
