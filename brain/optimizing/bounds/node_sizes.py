"""Sizes a node can have: positive (a GPU count may be 0), at most the largest node's.

A size that is not positive is dropped (the job's current value stays), one above the
largest node is capped to it; role sizes, launches and migrations alike, each a step of
its own where the chain bounds them.
"""

from __future__ import annotations

from dataclasses import replace

from brain.domain import Resources, RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import SIZE_FIELDS


def role_sizes(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each role's sizes bounded, and a negative count dropped."""
    reasons: list[Reason] = []
    roles = {}
    for role, spec in proposal.roles.items():
        caps = _caps(view.node_max)
        values = {}
        for field, cap in caps.items():
            values[field], why = _bounded_value(role, field, getattr(spec, field), cap)
            reasons += why
        count = spec.count
        if count is not None and count < 0:
            reasons.append(
                Reason(GUARD, f"dropped {role}.count={count}: counts cannot be negative")
            )
            count = None
        roles[role] = RoleSpec(count=count, **values)
    return replace(proposal, roles=roles), reasons


def launch_sizes(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    launch, reasons = _bounded_changes("launch", proposal.launch, view.node_max)
    return replace(proposal, launch=launch), reasons


def migration_sizes(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    migrate, reasons = _bounded_changes("migrate", proposal.migrate, view.node_max)
    return replace(proposal, migrate=migrate), reasons


def _caps(node_max: Resources) -> dict[str, float]:
    return {
        "cpu": node_max.cpu,
        "cpu_limit": node_max.cpu,
        "memory_mib": node_max.memory_mib,
        "gpu": node_max.gpu,
    }


def _bounded_value(
    label: str, field: str, value: float | None, cap: float
) -> tuple[float | None, list[Reason]]:
    if value is None:
        return None, []
    # A GPU count may be zero (CPU-only); any other size must be positive.
    invalid = value < 0 if field == "gpu" else value <= 0
    if invalid:
        return None, [
            Reason(
                GUARD, f"dropped {label}.{field}={value}: sizes must be positive", {"value": value}
            )
        ]
    if value > cap:
        return cap, [
            Reason(
                GUARD,
                f"capped {label}.{field} from {value} to the largest node's {cap}",
                evidence={"value": value},
                threshold={"node_max": cap},
            )
        ]
    return value, []


def _bounded_changes(
    kind: str, changes: list[NodeChange], node_max: Resources
) -> tuple[list[NodeChange], list[Reason]]:
    caps = _caps(node_max)
    bounded, reasons = [], []
    for change in changes:
        label = f"{kind} {change.name or change.role}"
        values = {}
        for field in SIZE_FIELDS:
            values[field], why = _bounded_value(label, field, getattr(change, field), caps[field])
            reasons += why
        bounded.append(replace(change, **values))
    return bounded, reasons
