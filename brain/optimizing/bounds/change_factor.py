"""How far one plan may move a job: a factor per role's count and size.

No plan changes a role's count or per-node size by more than ``max_change_factor`` up
or down (one estimate took a job from 12 cores to 64 and cut its PS memory from 8192 to
948 MiB): a bad measurement costs one bounded step, and the next plan sees what the step
did; a migrated node's size is held to the same factor. An OOM fix is not bounded:
memory must grow as far as it must. Nor are the trainers (workers, chief) of the
estimate stage's plan: it sizes them once, from minutes of measured use, and cut to 8x
the next plans would be spent on the jump (1 -> 8 -> 64 workers) before any running rule
could act; the limits, min/max and node maxima still hold them. Its PS are held to the
factor: the running stage grows the tier from what it measures, and the limit a plan
of 27 one-core PS would spend is left for a hot PS to grow.
"""

from __future__ import annotations

import math
from dataclasses import replace

from brain.domain import ROLE_CHIEF, ROLE_WORKER, RoleSpec, Stage
from brain.optimizing.bounds.units import ceil_to, floor_to, step
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import NodeView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import EPSILON, SIZE_FIELDS, current_role

# The roles an estimate stage's plan sizes in one step.
_TRAINERS = frozenset({ROLE_WORKER, ROLE_CHIEF})


def change_factor(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each planned count and size kept within ``factor`` of what the role has now: a
    count at most ``ceil(max(now, 1) x factor)`` and at least ``floor(now / factor)``
    (never 0 when it runs), a size between ``now / factor`` and ``now x factor``; the
    trainers of an estimate stage's plan are left as planned."""
    factor = view.max_change_factor
    if factor is None or proposal.source_event_id is not None:
        return proposal, []
    bounded = dict(proposal.roles)
    reasons = []
    for role, planned in proposal.roles.items():
        if view.stage == Stage.estimate and role in _TRAINERS:
            continue
        now = current_role(role, view.job, view.nodes)
        values, changes = {}, []
        if planned.count is not None and now.count is not None:
            high = math.ceil(max(now.count, 1) * factor - EPSILON)
            low = max(math.floor(now.count / factor + EPSILON), 1 if now.count else 0)
            count = min(max(planned.count, low), high)
            if count != planned.count:
                values["count"] = count
                changes.append(f"count {now.count} -> {planned.count} cut to {count}")
        sizes, cuts = _bounded_sizes(planned, now, factor)
        values |= sizes
        changes += cuts
        if not values:
            continue
        bounded[role] = replace(planned, **values)
        reasons.append(
            Reason(
                GUARD,
                f"{role}: one plan changes a count or size at most {factor:g}x: "
                + ", ".join(changes),
                evidence={"role": role, "changes": changes},
                threshold={"max_change_factor": factor},
            )
        )
    return replace(proposal, roles=bounded), reasons


def migration_change_factor(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each migration's sizes kept between the node's size now / ``factor`` and x
    ``factor``, as a role's are."""
    factor = view.max_change_factor
    if factor is None or proposal.source_event_id is not None:
        return proposal, []
    sizes = {n.name: n for n in view.nodes}
    bounded, reasons = [], []
    for change in proposal.migrate:
        node = sizes.get(change.name or "")
        values, changes = _bounded_sizes(change, node, factor) if node is not None else ({}, [])
        if values:
            change = replace(change, **values)
            reasons.append(
                Reason(
                    GUARD,
                    f"migrate {change.name}: one plan changes a node's size at most "
                    f"{factor:g}x: " + ", ".join(changes),
                    evidence={"node": change.name, "changes": changes},
                    threshold={"max_change_factor": factor},
                )
            )
        bounded.append(change)
    return replace(proposal, migrate=bounded), reasons


def _bounded_sizes(
    planned: RoleSpec | NodeChange, now: RoleSpec | NodeView, factor: float
) -> tuple[dict[str, float], list[str]]:
    """The planned sizes kept between ``now / factor`` and ``now x factor`` (a size not
    planned, or not known now, is left alone): the sizes cut, and a note per cut."""
    values, changes = {}, []
    for field in SIZE_FIELDS:
        wanted, size = getattr(planned, field), getattr(now, field)
        if wanted is None or not size:
            continue
        kept = min(max(wanted, size / factor), size * factor)
        if abs(kept - wanted) > EPSILON:
            kept = _round(field, kept, down=wanted > kept)
            values[field] = kept
            changes.append(f"{field} {size:g} -> {wanted:g} cut to {kept:g}")
    return values, changes


def _round(field: str, value: float, down: bool) -> float:
    """A bounded size rounded to its step (0.01 core, 1 MiB, 1 GPU) towards the bound."""
    return (floor_to if down else ceil_to)(value, step(field, value))
