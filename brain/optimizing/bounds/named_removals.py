"""A shrinking role names the nodes it removes: its highest indices, which are the
elastic ones above ``min_count`` (the last added), so the master removes exactly those
and the job's record knows which went."""

from __future__ import annotations

from dataclasses import replace

from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason


def named_removals(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    removals = list(proposal.remove)
    reasons = []
    for role, spec in proposal.roles.items():
        if spec.count is None:
            continue
        named = {c.name for c in removals if c.role == role}
        staying = sorted(
            (n for n in view.nodes if n.role == role and n.name not in named),
            key=lambda n: n.index,
        )
        surplus = staying[spec.count :][::-1]
        if not surplus:
            continue
        removals += [NodeChange(role=role, name=n.name) for n in surplus]
        reasons.append(
            Reason(
                GUARD,
                f"{role} goes from {len(staying) + len(named)} to {spec.count} nodes: removes "
                + ", ".join(n.name for n in surplus)
                + " (highest index first: the elastic ones)",
                evidence={"role": role, "removed": [n.name for n in surplus]},
            )
        )
    return replace(proposal, remove=removals), reasons
