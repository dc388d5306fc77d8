"""Relaunch of an OOM-killed node with the memory its use says it needs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import EventKind, PlanStatus, RoleSpec, Stage
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    EventView,
    NodeSample,
    NodeView,
    OptimizerContext,
    PlanView,
    Proposal,
)
from brain.optimizing.roles import SHARDED_ROLES
from optimizers._common import ceil_mib, no_change, reason, resized, seconds_since

NAME = "oom_recovery"
# Memory counts as growing when at least this share of its sample-to-sample steps rise.
_RISING_SHARE = 0.8


class OomRecoverySettings(BaseModel):
    memory_factor: float = Field(
        2.0,
        ge=1.1,
        le=10.0,
        description="The least a fix gives: the killed size x this factor.",
    )
    unseen_factor: float = Field(
        3.0,
        ge=1.1,
        le=10.0,
        description="The fix when no node of the role left a sample before the kill: the "
        "killed size x this factor. A pod killed before its first sample held more than its "
        "size from the start, by an amount nothing measured; the estimate re-sizes it from "
        "its measured peak minutes later, so a fix too large costs little and one too small "
        "another kill.",
    )
    growth_horizon_s: float = Field(
        3600,
        ge=0,
        le=7 * 86400,
        description="How far ahead (seconds) a fix projects the memory growth it measured: "
        "one fix should outlast the growth that killed the node.",
    )
    growth_margin: float = Field(
        1.2, ge=1.0, le=4.0, description="Headroom on the projected need (peak plus growth)."
    )
    min_growth_samples: int = Field(
        3, ge=2, le=100, description="Samples of a node needed before its memory growth counts."
    )
    max_step_mib: float = Field(
        32768, ge=256, le=1048576, description="Largest memory increase (MiB) in one relaunch."
    )
    give_up_after_ooms: int = Field(
        3, ge=1, le=100, description="Once a node was OOM-killed this many times, stop growing it."
    )


@dataclass(frozen=True)
class _Need:
    """What the killed node's role needs, from the samples before the kill."""

    peak_mib: float  # the most a node of the fix held (0: no sample)
    growth_mib_per_s: float  # the fastest growth measured (0: none, or too few samples)
    memory_mib: float  # the size the fix asks for, before the caps
    from_peers: bool = False  # measured on the role's other nodes (the node left no sample)


class OomRecoveryOptimizer:
    """Relaunches the OOM-killed node (``context.node``) with the memory it needs.

    The need is measured, not guessed: the most the node held and, when its memory grew
    steadily over its last samples (most steps between them rising, so that a spike is no
    trend), that growth projected ``growth_horizon_s`` ahead, times
    ``growth_margin``; never less than the killed size x ``memory_factor``, capped per
    step and by the largest node. When no node of the role left a sample (killed before
    its first one, and its peers too), the killed size is all the kill tells: the fix is
    that x ``unseen_factor``.
    A worker or chief holds a whole replica, so what killed one kills the others: a role
    of several such nodes is resized as one (every node, by one plan), sized by the most
    any of them held and the fastest growth. A PS holds its own shard: it is migrated
    alone. Each OOM event is answered at most once: the proposal answers the newest
    ``oom`` event of the node that no earlier plan answered (``source_event_id``), and a
    kill that an OOM fix of its role already covers (still pending, or applied after the
    kill) is answered with no change. A node killed too often is not grown again.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.oom})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}), nodes=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.oom: 10}
    Settings: ClassVar[type[OomRecoverySettings]] = OomRecoverySettings

    def propose(self, context: OptimizerContext, settings: OomRecoverySettings) -> Proposal:
        node = next((n for n in context.nodes if n.name == context.node), None)
        if node is None:
            return no_change(
                NAME, f"OOM stage for unknown node {context.node!r}: nothing to relaunch"
            )
        ooms = sorted(
            (e for e in context.events if e.kind == EventKind.oom and e.node == node.name),
            key=lambda e: (e.ts, e.id),
        )
        answered = {p.source_event_id for p in context.plans if p.source_event_id is not None}
        pending = [e for e in ooms if e.id not in answered]
        evidence = {"node": node.name, "oom_events": len(ooms), "memory_mib": node.memory_mib}
        if not pending:
            return no_change(
                NAME, f"every OOM event of {node.name} ({len(ooms)}) was already answered", evidence
            )
        event = pending[-1]
        covering = _covering_fix(context, node, event)
        if covering is not None:
            size = covering.roles[node.role].memory_mib
            return _answered(
                f"{node.name} OOM-killed (event {event.id}) at {node.memory_mib:.0f} MiB or "
                f"less: plan {covering.id}, an OOM fix of every {node.role}, already gives "
                f"it {size:.0f} MiB ({covering.status.value}); no second plan",
                event,
                evidence | {"covered_by_plan": covering.id},
            )
        if len(ooms) >= settings.give_up_after_ooms:
            return _answered(
                f"{node.name} was OOM-killed {len(ooms)} times (limit "
                f"{settings.give_up_after_ooms}): not growing it again, "
                "its memory use needs a look",
                event,
                evidence,
                {"give_up_after_ooms": settings.give_up_after_ooms},
            )
        cap = context.node_max.memory_mib
        if node.memory_mib >= cap:
            return _answered(
                f"{node.name} already has the largest node's memory ({cap:.0f} MiB): cannot grow",
                event,
                evidence,
                {"node_max_memory_mib": cap},
            )
        group = _fixed_together(context, node)
        need = _need(context, node, group, settings)
        memory = ceil_mib(min(need.memory_mib, node.memory_mib + settings.max_step_mib, cap))
        memory = max(memory, *(n.memory_mib for n in group))
        why = reason(
            NAME,
            _message(node, event, len(ooms), need, memory, group, settings, cap),
            evidence
            | {
                "event_id": event.id,
                "peak_mib": round(need.peak_mib, 1),
                "growth_mib_per_s": round(need.growth_mib_per_s, 4),
                "new_memory_mib": memory,
                "nodes": [n.name for n in group],
            },
            {
                "memory_factor": settings.memory_factor,
                "unseen_factor": settings.unseen_factor,
                "growth_horizon_s": settings.growth_horizon_s,
                "growth_margin": settings.growth_margin,
                "max_step_mib": settings.max_step_mib,
                "node_max_memory_mib": cap,
            },
        )
        if len(group) > 1:
            return Proposal(
                roles={node.role: RoleSpec(memory_mib=memory)},
                source_event_id=event.id,
                reasons=[why],
            )
        return Proposal(
            migrate=[resized(node, memory_mib=memory)], source_event_id=event.id, reasons=[why]
        )


def _answered(
    message: str, event: EventView, evidence: dict, threshold: dict | None = None
) -> Proposal:
    """No change, as the answer to ``event`` (so the kill is not asked about again)."""
    proposal = no_change(NAME, message, evidence, threshold)
    proposal.source_event_id = event.id
    return proposal


def _fixed_together(context: OptimizerContext, node: NodeView) -> list[NodeView]:
    """The nodes one fix resizes: every node of a replica role (what killed one kills the
    others), the node alone in a sharded one."""
    if node.role in SHARDED_ROLES:
        return [node]
    return sorted(context.nodes_of(node.role), key=lambda n: n.index)


def _covering_fix(context: OptimizerContext, node: NodeView, event: EventView) -> PlanView | None:
    """An OOM fix of ``node``'s whole role that this kill does not outrun: still pending
    with more memory than the node has, or applied at or after the kill (the node was
    killed at its old size)."""
    for plan in sorted(context.plans, key=lambda p: p.id, reverse=True):
        spec = plan.roles.get(node.role)
        if plan.source_event_id is None or spec is None or spec.memory_mib is None:
            continue
        pending = plan.status == PlanStatus.proposed and spec.memory_mib > node.memory_mib
        after_kill = (
            plan.status == PlanStatus.applied
            and plan.applied_at is not None
            and plan.applied_at >= event.ts
        )
        if pending or after_kill:
            return plan
    return None


def _need(
    context: OptimizerContext,
    node: NodeView,
    group: list[NodeView],
    settings: OomRecoverySettings,
) -> _Need:
    """The most any node of ``group`` held and the fastest growth among them, projected
    ``growth_horizon_s`` ahead from the killed size (the kill says the need passed it).
    A PS killed before its first sample (a new one, killed at once) is judged by the other
    PS of its tier: the most one of them held is the best guess of what it needs."""
    measured = group
    if not any(context.samples_of(n.name) for n in group):
        measured = context.nodes_of(node.role)
    peak, growth = 0.0, 0.0
    for member in measured:
        samples = sorted(context.samples_of(member.name), key=lambda s: s.ts)
        peak = max([peak, *(s.memory_mib for s in samples)])
        if len(samples) >= settings.min_growth_samples:
            growth = max(growth, _steady_growth(samples))
    level = max(node.memory_mib, peak)
    projected = (level + growth * settings.growth_horizon_s) * settings.growth_margin
    # Nothing measured: the pod passed its size before the first sample, by an unknown
    # amount (x 2 left workers asking 4096 of 10240 MiB killed twice).
    factor = settings.memory_factor if peak else settings.unseen_factor
    wanted = max(node.memory_mib * factor, projected)
    return _Need(peak, growth, wanted, from_peers=measured is not group)


def _steady_growth(samples: list[NodeSample]) -> float:
    """The rise from the first sample to the last (MiB/s) when memory rose steadily: at
    least ``_RISING_SHARE`` of the steps between consecutive samples do not fall. Sparse
    embeddings or a leak count at their rate; a spike that came and went is no trend (a
    line through it would project it over the whole horizon)."""
    steps = [b.memory_mib - a.memory_mib for a, b in zip(samples, samples[1:], strict=False)]
    span = seconds_since(samples[0].ts, samples[-1].ts)
    if not steps or span <= 0:
        return 0.0
    rising = sum(1 for step in steps if step >= 0) / len(steps)
    if rising < _RISING_SHARE:
        return 0.0
    return max((samples[-1].memory_mib - samples[0].memory_mib) / span, 0.0)


def _message(
    node: NodeView,
    event: EventView,
    kills: int,
    need: _Need,
    memory: float,
    group: list[NodeView],
    settings: OomRecoverySettings,
    cap: float,
) -> str:
    seen = (
        f"peak {need.peak_mib:.0f} MiB, growing {need.growth_mib_per_s * 60:.1f} MiB/min"
        if need.peak_mib
        else "no sample before the kill"
    )
    if need.from_peers:
        seen = f"no sample before the kill; the other {node.role} nodes: {seen}"
    target = f"{node.name}" if len(group) == 1 else f"every {node.role} ({len(group)})"
    return (
        f"{node.name} OOM-killed (event {event.id}, {kills} so far) at {node.memory_mib:.0f} "
        f"MiB; {seen}: {target} {node.memory_mib:.0f} -> {memory:.0f} MiB (the need "
        f"{settings.growth_horizon_s:.0f} s ahead x{settings.growth_margin}, at least "
        f"x{settings.memory_factor if need.peak_mib else settings.unseen_factor} of the killed "
        f"size{'' if need.peak_mib else ', as nothing was measured'}; at most "
        f"+{settings.max_step_mib:.0f} MiB and {cap:.0f} MiB)"
    )
