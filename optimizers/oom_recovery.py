"""Relaunch of an OOM-killed node with more memory."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import EventKind, Stage
from brain.optimizing import ANY_ROLE, Changes, ContextInput, OptimizerContext, Proposal
from optimizers._common import ceil_mib, no_change, reason, resized

NAME = "oom_recovery"


class OomRecoverySettings(BaseModel):
    memory_factor: float = Field(
        2.0, ge=1.1, le=10.0, description="New memory request = current request x this factor."
    )
    max_step_mib: float = Field(
        32768, ge=256, le=1048576, description="Largest memory increase (MiB) in one relaunch."
    )
    give_up_after_ooms: int = Field(
        3, ge=1, le=100, description="Once a node was OOM-killed this many times, stop growing it."
    )


class OomRecoveryOptimizer:
    """Relaunches the OOM-killed node (``context.node``) with more memory.

    The request grows by a factor, capped per step and by the largest node. Each OOM
    event is answered at most once: the proposal answers the newest ``oom`` event of the
    node that no earlier plan answered (``source_event_id``). A node killed too often is
    not grown again; the reason says so instead.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.oom})
    changes: ClassVar[Changes] = Changes(nodes=frozenset({ANY_ROLE}))
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
        if len(ooms) >= settings.give_up_after_ooms:
            proposal = no_change(
                NAME,
                f"{node.name} was OOM-killed {len(ooms)} times (limit "
                f"{settings.give_up_after_ooms}): not growing it again, "
                "its memory use needs a look",
                evidence,
                {"give_up_after_ooms": settings.give_up_after_ooms},
            )
            proposal.source_event_id = event.id
            return proposal
        cap = context.node_max.memory_mib
        if node.memory_mib >= cap:
            proposal = no_change(
                NAME,
                f"{node.name} already has the largest node's memory ({cap:.0f} MiB): cannot grow",
                evidence,
                {"node_max_memory_mib": cap},
            )
            proposal.source_event_id = event.id
            return proposal
        wanted = node.memory_mib * settings.memory_factor
        memory = ceil_mib(min(wanted, node.memory_mib + settings.max_step_mib, cap))
        return Proposal(
            migrate=[resized(node, memory_mib=memory)],
            source_event_id=event.id,
            reasons=[
                reason(
                    NAME,
                    f"{node.name} OOM-killed (event {event.id}, {len(ooms)} so far): memory "
                    f"{node.memory_mib:.0f} -> {memory:.0f} MiB (x{settings.memory_factor}, "
                    f"at most +{settings.max_step_mib:.0f} MiB and {cap:.0f} MiB)",
                    evidence | {"event_id": event.id, "new_memory_mib": memory},
                    {
                        "memory_factor": settings.memory_factor,
                        "max_step_mib": settings.max_step_mib,
                        "node_max_memory_mib": cap,
                    },
                )
            ],
        )
