"""One proposal from the several a stage's optimizers made."""

from __future__ import annotations

from dataclasses import fields, replace

from brain.domain import RoleSpec
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import SIZE_FIELDS


def combine(proposals: list[tuple[str, Proposal]]) -> Proposal:
    """Merge ``(optimizer name, proposal)`` pairs, in order, into one proposal.

    Roles merge field by field, a later non-None value overriding an earlier one (the
    override is recorded as a guard reason); lists are concatenated, except that a node
    migrated twice is migrated once with the larger of each size. But for its CPU where
    one of the proposals also sets the node's role count: that one sized the node for the
    new count (a PS kept apart from the role beside more PS), while a move to more CPU
    for today's count is stale once the new PS take load off every PS.
    """
    merged = Proposal()
    counted: set[tuple[str, str | None]] = set()
    for name, proposal in proposals:
        for role, spec in proposal.roles.items():
            earlier = merged.roles.get(role)
            if earlier is not None:
                merged.reasons.extend(_overrides(role, earlier, spec, name))
            merged.roles[role] = spec if earlier is None else earlier.overlay(spec)
        merged.launch.extend(proposal.launch)
        merged.remove.extend(proposal.remove)
        merged.ps_hosts.extend(proposal.ps_hosts)
        merged.reasons.extend(proposal.reasons)
        for change in proposal.migrate:
            sets_count = proposal.roles.get(change.role, RoleSpec()).count is not None
            _merge_migration(merged.migrate, change, sets_count, counted)
        if proposal.source_event_id is not None:
            merged.source_event_id = proposal.source_event_id
    return merged


def _overrides(role: str, earlier: RoleSpec, later: RoleSpec, optimizer: str) -> list[Reason]:
    """A reason for every field of ``role`` that ``optimizer`` sets to another value."""
    reasons = []
    for f in fields(RoleSpec):
        old, new = getattr(earlier, f.name), getattr(later, f.name)
        if old is not None and new is not None and old != new:
            reasons.append(
                Reason(
                    GUARD,
                    f"{optimizer} overrides {role}.{f.name}: {old} -> {new}",
                    evidence={"role": role, "field": f.name, "earlier": old, "later": new},
                )
            )
    return reasons


def _merge_migration(
    migrations: list[NodeChange],
    change: NodeChange,
    sets_count: bool,
    counted: set[tuple[str, str | None]],
) -> None:
    """Add ``change`` to ``migrations``; ``sets_count``: its proposal sets the node's role
    count, and ``counted`` holds the nodes whose CPU such a proposal set."""
    key = (change.role, change.name)
    for i, existing in enumerate(migrations):
        if change.name is not None and (existing.role, existing.name) == key:
            larger = {
                f: _max_or_none(getattr(existing, f), getattr(change, f)) for f in SIZE_FIELDS
            }
            if sets_count and change.cpu is not None:
                larger["cpu"] = change.cpu
            elif key in counted:
                larger["cpu"] = existing.cpu
            migrations[i] = replace(existing, **larger)
            break
    else:
        migrations.append(change)
    if sets_count and change.cpu is not None:
        counted.add(key)


def _max_or_none(a: float | None, b: float | None) -> float | None:
    present = [v for v in (a, b) if v is not None]
    return max(present) if present else None
