"""Every planned role count within the role's declared ``min_count``/``max_count``."""

from __future__ import annotations

from dataclasses import replace

from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import bounds_dict, current_role, with_count


def role_counts(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each planned count clipped into its role's bounds; a count clipped back to what
    the role runs now is no change (the role is left out when nothing else changes)."""
    job = view.job
    kept, reasons = dict(proposal.roles), []
    for role, spec in proposal.roles.items():
        bounds = job.bounds_of(role)
        if spec.count is None or bounds.clip(spec.count) == spec.count:
            continue
        clipped = bounds.clip(spec.count)
        side = "max_count" if clipped < spec.count else "min_count"
        current = current_role(role, job, view.nodes).count
        reasons.append(
            Reason(
                GUARD,
                f"clipped {role}.count from {spec.count} to {clipped}: the job's {side} "
                f"is {getattr(bounds, side)}"
                + (f" and {role} already runs {current}" if clipped == current else ""),
                evidence={"role": role, "count": spec.count, "current_count": current},
                threshold=bounds_dict(bounds),
            )
        )
        kept = with_count(kept, role, clipped, current)
    return replace(proposal, roles=kept), reasons
