"""A node asked to move to a fresh node at its own size (a slow node replaced) grows
nothing: it needs no headroom, and is kept although it changes no size. Its own size is
the one it has once the plan's roles apply: where the plan resizes the node's role, a
move at the node's size of today is growth (or a cut), which the limits judged."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.node_changes import size_once_roles_apply
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import NodeChange, Proposal, Reason
from brain.optimizing.roles import EPSILON, SIZE_FIELDS


def replacements(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """The proposed same-size migrations an earlier step dropped, back in the plan; not
    one an earlier step cut to fit the limits (the plan resized the node's role, so
    keeping the node's size grows it past the role's): the node is migrated once, cut."""
    same_size = _same_size_migrations(view.proposed.migrate, proposal.roles, view)
    kept = {c.name for c in proposal.migrate}
    back = [c for c in view.proposed.migrate if c.name in same_size and c.name not in kept]
    if not back:
        return proposal, []
    return replace(proposal, migrate=[*proposal.migrate, *back]), []


def _same_size_migrations(
    migrate: Sequence[NodeChange], roles: dict[str, RoleSpec], view: BoundsView
) -> set[str]:
    """Names of the nodes every migration of which keeps the node's size once ``roles``
    apply."""
    sizes = {n.name: n for n in view.nodes}
    asked = {}
    for change in migrate:
        node = sizes.get(change.name or "")
        if node is None:
            asked[change.name] = False
            continue
        before = size_once_roles_apply(node, roles, view.job, view.nodes)
        same = all(
            getattr(change, f) is None or abs(getattr(change, f) - before[f]) <= EPSILON
            for f in SIZE_FIELDS
        )
        asked[change.name] = same and asked.get(change.name, True)
    return {name for name, same in asked.items() if same and name}
