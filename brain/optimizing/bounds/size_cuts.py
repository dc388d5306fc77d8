"""Sizes cut so that a plan never leaves the job's limits.

The worker count goes first (``worker_count``); what giving up workers cannot fit (a job
registered at 8 + 8 cores under a 15-core limit has no worker to give up) is fitted here:
first the plan's own growth of the resource is taken back, in proportion, then the
per-node size of every role that uses it is cut in the same proportion, rounded down to
a step (0.01 core, 1 MiB, 1 GPU; a fraction of a GPU only for a role already on a
fraction). Each cut is a reason: the plan says what it took away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.units import UNITS, floor_to, step
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import (
    EPSILON,
    current_role,
    effective_roles,
    exceeded_limits,
    limits_dict,
    planned_totals,
)

# A growth trimmed below this fraction of the size is left out.
_SLIVER = 0.02
# Proportional cuts rounded down land within the limit at once; a node migrated
# earlier to another size can leave a remainder that one more pass takes.
_PASSES = 3


def size_cuts(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """The sizes of the resources over the job's limits cut in proportion; a reason per
    cut, and one if the job still exceeds (a GPU cannot go below one)."""
    roles, job, nodes, failed = proposal.roles, view.job, view.nodes, view.failed_nodes
    reasons: list[Reason] = []
    for _ in range(_PASSES):
        over = exceeded_limits(planned_totals(roles, job, nodes, failed), job.limits)
        if not over:
            return replace(proposal, roles=roles), reasons
        for field, (total, limit) in over.items():
            roles, why = _cut_growth(roles, job, nodes, field, total - limit, limit)
            reasons += why
            fitted = exceeded_limits(planned_totals(roles, job, nodes, failed), job.limits)
            if field in fitted:
                total = fitted[field][0]
                roles, why = _cut(roles, job, nodes, field, limit / total, total, limit)
                reasons += why
    over = exceeded_limits(planned_totals(roles, job, nodes, failed), job.limits)
    if over:
        reasons.append(
            Reason(
                GUARD,
                "the job still exceeds its limits: "
                + ", ".join(f"{k} {v[0]:g} > {v[1]:g}" for k, v in over.items()),
                evidence={k: v[0] for k, v in over.items()},
                threshold=limits_dict(job.limits),
            )
        )
    return replace(proposal, roles=roles), reasons


def _cut_growth(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    field: str,
    excess: float,
    limit: float,
) -> tuple[dict[str, RoleSpec], list[Reason]]:
    """The plan's own size increases of ``field`` taken back, in proportion, by up to
    ``excess``: what the plan adds goes before what the job already runs with."""
    effective = effective_roles(roles, job, nodes)
    growth = {}
    for role, planned in roles.items():
        wanted, now = getattr(planned, field), getattr(current_role(role, job, nodes), field)
        count = effective[role].count or 0
        if wanted is not None and now is not None and wanted > now + EPSILON and count:
            growth[role] = (now, wanted, count)
    added = sum(count * (wanted - now) for now, wanted, count in growth.values())
    if added <= EPSILON:
        return roles, []
    keep = max(added - excess, 0.0) / added
    cut = dict(roles)
    changes = []
    for role, (now, wanted, _count) in growth.items():
        granted = max(floor_to(now + (wanted - now) * keep, step(field, wanted)), now)
        # What is left of a growth trimmed to a sliver (the slack the rounding left) is
        # no change: asked again, the plan would otherwise creep by one step each time.
        if granted - now < max(step(field, wanted), _SLIVER * now):
            granted = now
        cut[role] = replace(roles[role], **{field: None if granted <= now + EPSILON else granted})
        changes.append(f"{role} {now:g} -> {wanted:g} cut to {granted:g}")
    unit = UNITS[field]
    reason = Reason(
        GUARD,
        f"cut the plan's growth of {field} to fit the job's {field} limit {limit:g} {unit}: "
        + ", ".join(changes),
        evidence={"field": field, "over_by": excess, "cuts": changes},
        threshold={f"limit_{field}": limit},
    )
    return {role: spec for role, spec in cut.items() if spec != RoleSpec()}, [reason]


def _cut(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    field: str,
    factor: float,
    total: float,
    limit: float,
) -> tuple[dict[str, RoleSpec], list[Reason]]:
    cut = dict(roles)
    changes = []
    for role, spec in effective_roles(roles, job, nodes).items():
        size = getattr(spec, field)
        if not spec.count or not size:
            continue
        smaller = floor_to(size * factor, step(field, size))
        if smaller <= 0 or smaller >= size - EPSILON:
            continue
        values = {field: smaller}
        if field == "cpu" and spec.cpu_limit is not None and spec.cpu_limit < smaller:
            values["cpu_limit"] = smaller
        cut[role] = replace(roles.get(role, RoleSpec()), **values)
        changes.append(f"{role} {size:g} -> {smaller:g}")
    if not changes:
        return cut, []
    unit = UNITS[field]
    reason = Reason(
        GUARD,
        f"cut {field} per node to fit the job's {field} limit {limit:g} {unit} "
        f"({total:g} {unit} planned): " + ", ".join(changes),
        evidence={"field": field, "planned_total": total, "cuts": changes},
        threshold={f"limit_{field}": limit},
    )
    return cut, [reason]
