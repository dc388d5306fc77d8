"""Launches and removals keep a role within its ``min_count``/``max_count`` too."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import bounds_dict, current_role


def node_list_counts(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Launches and removals of a role whose count the plan does not set, cut where they
    would take it past ``max_count`` (the last launches) or below ``min_count``."""
    launch, remove = list(proposal.launch), list(proposal.remove)
    reasons = []
    for role in dict.fromkeys(c.role for c in [*proposal.launch, *proposal.remove]):
        if proposal.roles.get(role, RoleSpec()).count is not None:
            continue  # the count decides; the lists name nodes
        bounds = view.job.bounds_of(role)
        current = current_role(role, view.job, view.nodes).count or 0
        launches = sum(1 for c in launch if c.role == role)
        wanted = current + launches - sum(1 for c in remove if c.role == role)
        allowed = bounds.clip(wanted)
        if allowed == wanted:
            continue
        # The last ones of the role go (equal changes are told apart by position).
        if allowed < wanted:
            launch = _without_last(launch, role, wanted - allowed)
        else:
            remove = _without_last(remove, role, allowed - wanted)
        kind = "launch" if allowed < wanted else "removal"
        reasons.append(
            Reason(
                GUARD,
                f"dropped {abs(wanted - allowed)} {kind}(s) of {role}: {current} -> {wanted} "
                f"nodes would leave its bounds, {allowed} allowed",
                evidence={"role": role, "current_count": current, "wanted_count": wanted},
                threshold=bounds_dict(bounds),
            )
        )
    return replace(proposal, launch=launch, remove=remove), reasons


def _without_last(changes: list[NodeChange], role: str, drop: int) -> list[NodeChange]:
    positions = [i for i, c in enumerate(changes) if c.role == role][-drop:]
    return [c for i, c in enumerate(changes) if i not in positions]
