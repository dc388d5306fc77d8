"""A node asked to move to a fresh node at its own size (a slow node replaced) grows
nothing: it needs no headroom, and is kept although it changes no size."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import NodeView
from brain.optimizing.proposal import NodeChange, Proposal, Reason
from brain.optimizing.roles import EPSILON, SIZE_FIELDS


def replacements(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """The proposed same-size migrations an earlier step dropped, back in the plan; not
    one an earlier step cut to fit the limits (the plan resized the node's role, so
    keeping the node's size grows it past the role's): the node is migrated once, cut."""
    same_size = _same_size_migrations(view.proposed.migrate, view.nodes)
    kept = {c.name for c in proposal.migrate}
    back = [c for c in view.proposed.migrate if c.name in same_size and c.name not in kept]
    if not back:
        return proposal, []
    return replace(proposal, migrate=[*proposal.migrate, *back]), []


def _same_size_migrations(migrate: Sequence[NodeChange], nodes: Sequence[NodeView]) -> set[str]:
    """Names of the nodes every migration of which keeps the node's size."""
    sizes = {n.name: n for n in nodes}
    asked = {}
    for change in migrate:
        node = sizes.get(change.name or "")
        same = node is not None and all(
            getattr(change, f) is None
            or abs(getattr(change, f) - (getattr(node, f) or 0.0)) <= EPSILON
            for f in SIZE_FIELDS
        )
        asked[change.name] = same and asked.get(change.name, True)
    return {name for name, same in asked.items() if same and name}
