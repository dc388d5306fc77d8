"""A plan that adds PS does not also move a PS to more CPU: the new PS take load off
every PS, and the tier changes once (a memory fix still goes through)."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import ROLE_PS, RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import EPSILON, current_role


def one_ps_change(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    planned = proposal.roles.get(ROLE_PS, RoleSpec()).count
    current = current_role(ROLE_PS, view.job, view.nodes).count or 0
    if planned is None or planned <= current:
        return proposal, []
    sizes = {n.name: n for n in view.nodes}
    kept, reasons = [], []
    for change in proposal.migrate:
        node = sizes.get(change.name or "")
        more_cpu = node is not None and (change.cpu or 0.0) > node.cpu + EPSILON
        more_memory = node is not None and (change.memory_mib or 0.0) > node.memory_mib + EPSILON
        if change.role == ROLE_PS and more_cpu and not more_memory:
            reasons.append(
                Reason(
                    GUARD,
                    f"dropped the migration of {change.name} to {change.cpu:g} cores: the plan "
                    f"adds PS ({current} -> {planned}), which takes load off every PS; one PS "
                    "change at a time",
                    evidence={"node": change.name, "ps_count": current, "ps_planned": planned},
                )
            )
            continue
        kept.append(change)
    return replace(proposal, migrate=kept), reasons
