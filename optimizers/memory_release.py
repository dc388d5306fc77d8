"""Giving memory back: a node whose memory use stayed far below its size for long."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import EventKind, Stage
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    NodeView,
    OptimizerContext,
    PlanView,
    Proposal,
)
from optimizers._common import (
    applied_changes,
    ceil_mib,
    migrates,
    no_change,
    reason,
    resized,
    seconds_since,
)

NAME = "memory_release"
# The optimizers whose migrations grow a node's memory against a kill, before or after it.
GROWERS = frozenset({"oom_risk", "oom_recovery"})


class MemoryReleaseSettings(BaseModel):
    hold_s: float = Field(
        43200,
        ge=600,
        le=30 * 86400,
        description="A node's memory peak must cover at least this many seconds of its "
        "samples (up to BRAIN_MEMORY_PEAK_WINDOW_S) before its memory is lowered, and no "
        "migration of the node may be younger.",
    )
    margin: float = Field(
        4.0, ge=1.05, le=10.0, description="New memory = this x the node's memory peak."
    )
    below_share: float = Field(
        0.5,
        ge=0.05,
        le=0.95,
        description="Lower only when the new memory is at most this share of the node's "
        "memory: a change restarts the node, so only a large saving pays.",
    )
    after_oom_s: float = Field(
        43200,
        ge=0,
        le=30 * 86400,
        description="No lowering within this many seconds of an OOM kill of the node or of "
        "an applied plan that grew its memory (oom_risk, oom_recovery).",
    )


class MemoryReleaseOptimizer:
    """Migrates a node to less memory when its peak stayed far below its size for long.

    A node whose memory peak over the service's peak window (``memory_peaks``) covers at
    least ``hold_s`` and times ``margin`` is at most ``below_share`` of its memory is
    migrated to ``margin`` x that peak: never below the newest use plus the margin, which
    the peak includes. The guard bounds the step by ``max_change_factor``. Nothing is
    lowered within ``hold_s`` of the node's last applied migration, nor within
    ``after_oom_s`` of an OOM kill of the node or a plan that grew it, so it does not undo
    ``oom_risk`` or ``oom_recovery``.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(nodes=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset({ContextInput.memory_peaks})
    # No default position: it trades OOM kills for memory (docs/savings.md).
    Settings: ClassVar[type[MemoryReleaseSettings]] = MemoryReleaseSettings

    def propose(self, context: OptimizerContext, settings: MemoryReleaseSettings) -> Proposal:
        threshold = {
            "hold_s": settings.hold_s,
            "margin": settings.margin,
            "below_share": settings.below_share,
            "after_oom_s": settings.after_oom_s,
        }
        proposal = Proposal()
        for node in context.nodes:
            _check_node(context, node, settings, threshold, proposal)
        if not proposal.reasons:
            return no_change(
                NAME,
                f"no node's memory peak x {settings.margin:g} stayed at most "
                f"{settings.below_share:.0%} of its memory for {settings.hold_s:.0f} s",
                threshold=threshold,
            )
        return proposal


def _check_node(
    context: OptimizerContext,
    node: NodeView,
    settings: MemoryReleaseSettings,
    threshold: dict[str, float],
    proposal: Proposal,
) -> None:
    peak = context.memory_peak_of(node.name)
    if peak is None or node.memory_mib <= 0:
        return
    covered_s = (context.now - peak.since).total_seconds()
    memory = ceil_mib(peak.peak_mib * settings.margin)
    if covered_s < settings.hold_s or memory > settings.below_share * node.memory_mib:
        return
    evidence = {
        "node": node.name,
        "memory_mib": node.memory_mib,
        "peak_mib": peak.peak_mib,
        "peak_covers_s": round(covered_s, 1),
    }
    blocked = _blocked(context, node.name, settings)
    if blocked is not None:
        proposal.reasons.append(
            reason(NAME, f"{node.name} uses little memory but {blocked}", evidence, threshold)
        )
        return
    proposal.migrate.append(resized(node, memory_mib=memory))
    proposal.reasons.append(
        reason(
            NAME,
            f"{node.name} peaked at {peak.peak_mib:.0f} of {node.memory_mib:.0f} MiB over "
            f"{covered_s:.0f} s -> migrate to {memory:.0f} MiB (x{settings.margin:g})",
            evidence | {"new_memory_mib": memory},
            threshold,
        )
    )


def _blocked(context: OptimizerContext, node: str, settings: MemoryReleaseSettings) -> str | None:
    """Why ``node`` must keep its memory for now (None: it may be lowered)."""
    moved = applied_changes(context, lambda p: migrates(p, node))
    since_moved = _age(context, moved[-1]) if moved else None
    if since_moved is not None and since_moved < settings.hold_s:
        return f"it was migrated {since_moved:.0f} s ago (hold {settings.hold_s:.0f} s)"
    kills = [e.ts for e in context.events if e.kind == EventKind.oom and e.node == node]
    role = next((n.role for n in context.nodes if n.name == node), None)
    grown = applied_changes(
        context, lambda p: (migrates(p, node) and _grew(p, node)) or _role_fixed(p, role)
    )
    recent = max([*kills, *grown], default=None)
    if recent is not None and _age(context, recent) < settings.after_oom_s:
        return (
            f"it was OOM-killed or grown {_age(context, recent):.0f} s ago "
            f"(after_oom_s {settings.after_oom_s:.0f} s)"
        )
    return None


def _grew(plan: PlanView, node: str) -> bool:
    """A plan that grew ``node`` against a kill: an OOM fix, or oom_risk's migration."""
    return plan.source_event_id is not None or any(
        r.optimizer in GROWERS and r.evidence.get("node") == node for r in plan.reasons
    )


def _role_fixed(plan: PlanView, role: str | None) -> bool:
    """An OOM fix that grew every node of ``role`` at once (oom_recovery's fix of a role of
    identical workers, which names only the node that was killed)."""
    spec = plan.roles.get(role) if role is not None else None
    return plan.source_event_id is not None and spec is not None and spec.memory_mib is not None


def _age(context: OptimizerContext, ts: datetime) -> float:
    return seconds_since(ts, context.now)
