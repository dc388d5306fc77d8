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

A new memory size for the role relaunches every node of it at the role's size, CPU
included, so a PS that runs above the role's CPU (``hot_ps`` moved it to more cores)
would come back at the role's: the step also migrates each such PS that stays, to its
own CPU and its share of the memory (a PS with more memory than the share keeps it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.units import ceil_to
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import EPSILON, SHARDED_ROLES, current_role


def shard_memory(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each sharded role's memory per node at least the sized total over its planned
    count, when that count is below the count the memory was sized for."""
    roles, migrate, reasons = dict(proposal.roles), list(proposal.migrate), []
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
        if planned.cpu is None or planned.cpu == now.cpu:
            migrate, kept = keep_node_sizes(role, count, now, need, proposal, view.nodes, migrate)
            reasons += kept
    return replace(proposal, roles=roles, migrate=migrate), reasons


def keep_node_sizes(
    role: str,
    count: int,
    now: RoleSpec,
    need: float,
    proposal: Proposal,
    nodes: Sequence[NodeView],
    migrate: list[NodeChange],
) -> tuple[list[NodeChange], list[Reason]]:
    """``migrate`` with each node of ``role`` that stays (the ``count`` lowest indices the
    plan does not remove) and runs above the role's CPU, or holds more than ``need`` MiB,
    migrated to its own CPU and at least ``need`` MiB: the new role memory relaunches it
    at the role's size. A migration the plan already has keeps its CPU and gets at least
    ``need`` MiB."""
    role_cpu = now.cpu or 0.0
    removed = {c.name for c in proposal.remove if c.role == role}
    staying = sorted(
        (n for n in nodes if n.role == role and n.name not in removed), key=lambda n: n.index
    )[:count]
    planned = {c.name: i for i, c in enumerate(migrate)}
    migrate, reasons = list(migrate), []
    for node in staying:
        if node.name in planned:
            i = planned[node.name]
            change = migrate[i]
            cpu = node.cpu if change.cpu is None else change.cpu
            memory = max(node.memory_mib if change.memory_mib is None else change.memory_mib, need)
            if (cpu, memory) == (change.cpu, change.memory_mib):
                continue
            migrate[i] = replace(change, cpu=cpu, memory_mib=memory)
        elif node.cpu > role_cpu + EPSILON or node.memory_mib > need + EPSILON:
            cpu, memory = node.cpu, max(node.memory_mib, need)
            migrate.append(NodeChange(role=role, name=node.name, cpu=cpu, memory_mib=memory))
        else:
            continue
        reasons.append(kept_size(node, role_cpu, need, cpu, memory))
    return migrate, reasons


def kept_size(node: NodeView, role_cpu: float, need: float, cpu: float, memory: float) -> Reason:
    held = [f"{cpu:g} cores"] if cpu > role_cpu + EPSILON else []
    held += [f"{memory:g} MiB"] if memory > need + EPSILON else []
    what = f"keeps {node.name} at {' and '.join(held)}" if held else f"gives {node.name} its share"
    return Reason(
        GUARD,
        f"{what}: the {node.role} role's new memory relaunches every {node.role} at the "
        f"role's {role_cpu:g} cores and {need:g} MiB, so {node.name} (now {node.cpu:g} cores, "
        f"{node.memory_mib:g} MiB) is migrated to {cpu:g} cores and {memory:g} MiB",
        evidence={
            "node": node.name,
            "role_cpu": role_cpu,
            "share_mib": need,
            "cpu": cpu,
            "memory_mib": memory,
            "node_cpu": node.cpu,
            "node_memory_mib": node.memory_mib,
        },
    )


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
