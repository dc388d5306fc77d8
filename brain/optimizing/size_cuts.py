"""Sizes cut so that a plan never leaves the job's limits or the largest node.

The guard first gives up workers to fit the job's limits; what it cannot fit that way
(a job registered at 8 + 8 cores under a 15-core limit has no worker to give up) is
fitted here by cutting the per-node size of every role that uses the resource, in the
same proportion, rounded down to a step (0.01 core, 1 MiB, 1 GPU; a fraction of a GPU
only for a role already on a fraction). A role already larger than the largest node is
cut to it too. Each cut is a reason: the plan says what it took away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from brain.domain import Resources, RoleSpec
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import Reason
from brain.optimizing.roles import (
    EPSILON,
    SIZE_FIELDS,
    current_role,
    effective_roles,
    exceeded_limits,
    limits_dict,
    planned_totals,
)

GUARD = "guard"
_STEPS = {"cpu": 0.01, "memory_mib": 1.0, "gpu": 1.0}
_UNITS = {"cpu": "cores", "memory_mib": "MiB", "gpu": "GPUs"}
# A growth trimmed below this fraction of the size is left out.
_SLIVER = 0.02
# Proportional cuts rounded down land within the limit at once; a node migrated
# earlier to another size can leave a remainder that one more pass takes.
_PASSES = 3


def cut_sizes_to_limits(
    roles: dict[str, RoleSpec], job: JobView, nodes: Sequence[NodeView], reasons: list[Reason]
) -> dict[str, RoleSpec]:
    """``roles`` with the sizes of the resources over the job's limits cut in proportion;
    a reason per cut, and one if the job still exceeds (a GPU cannot go below one)."""
    for _ in range(_PASSES):
        over = exceeded_limits(planned_totals(roles, job, nodes), job.limits)
        if not over:
            return roles
        for field, (total, limit) in over.items():
            roles = _cut_growth(roles, job, nodes, field, total - limit, limit, reasons)
            fitted = exceeded_limits(planned_totals(roles, job, nodes), job.limits)
            if field in fitted:
                total = fitted[field][0]
                roles = _cut(roles, job, nodes, field, limit / total, total, limit, reasons)
    over = exceeded_limits(planned_totals(roles, job, nodes), job.limits)
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
    return roles


def _cut_growth(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    field: str,
    excess: float,
    limit: float,
    reasons: list[Reason],
) -> dict[str, RoleSpec]:
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
        return roles
    keep = max(added - excess, 0.0) / added
    cut = dict(roles)
    changes = []
    for role, (now, wanted, _count) in growth.items():
        granted = max(_floor(now + (wanted - now) * keep, _step(field, wanted)), now)
        # What is left of a growth trimmed to a sliver (the slack the rounding left) is
        # no change: asked again, the plan would otherwise creep by one step each time.
        if granted - now < max(_step(field, wanted), _SLIVER * now):
            granted = now
        cut[role] = replace(roles[role], **{field: None if granted <= now + EPSILON else granted})
        changes.append(f"{role} {now:g} -> {wanted:g} cut to {granted:g}")
    unit = _UNITS[field]
    reasons.append(
        Reason(
            GUARD,
            f"cut the plan's growth of {field} to fit the job's {field} limit {limit:g} {unit}: "
            + ", ".join(changes),
            evidence={"field": field, "over_by": excess, "cuts": changes},
            threshold={f"limit_{field}": limit},
        )
    )
    return {role: spec for role, spec in cut.items() if spec != RoleSpec()}


def _cut(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    field: str,
    factor: float,
    total: float,
    limit: float,
    reasons: list[Reason],
) -> dict[str, RoleSpec]:
    cut = dict(roles)
    changes = []
    for role, spec in effective_roles(roles, job, nodes).items():
        size = getattr(spec, field)
        if not spec.count or not size:
            continue
        smaller = _floor(size * factor, _step(field, size))
        if smaller <= 0 or smaller >= size - EPSILON:
            continue
        values = {field: smaller}
        if field == "cpu" and spec.cpu_limit is not None and spec.cpu_limit < smaller:
            values["cpu_limit"] = smaller
        cut[role] = replace(roles.get(role, RoleSpec()), **values)
        changes.append(f"{role} {size:g} -> {smaller:g}")
    if changes:
        unit = _UNITS[field]
        reasons.append(
            Reason(
                GUARD,
                f"cut {field} per node to fit the job's {field} limit {limit:g} {unit} "
                f"({total:g} {unit} planned): " + ", ".join(changes),
                evidence={"field": field, "planned_total": total, "cuts": changes},
                threshold={f"limit_{field}": limit},
            )
        )
    return cut


def _step(field: str, size: float) -> float:
    if field == "gpu" and size < 1:
        return 0.01  # a role sharing a card keeps sharing
    return _STEPS[field]


def _floor(value: float, step: float) -> float:
    return round(math.floor(value / step + EPSILON) * step, 6)


def cap_at_node_max(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    node_max: Resources,
    reasons: list[Reason],
) -> dict[str, RoleSpec]:
    """Roles that run (or were registered) larger than the largest node, cut to it."""
    capped = dict(roles)
    for role, spec in effective_roles(roles, job, nodes).items():
        values = {}
        for field in SIZE_FIELDS:
            size, cap = getattr(spec, field), getattr(node_max, field)
            if size is not None and size > cap + EPSILON:
                values[field] = cap
        if spec.cpu_limit is not None and spec.cpu_limit > node_max.cpu + EPSILON:
            values["cpu_limit"] = node_max.cpu
        if not values or not spec.count:
            continue
        capped[role] = replace(roles.get(role, RoleSpec()), **values)
        reasons.append(
            Reason(
                GUARD,
                f"cut {role} to the largest node: "
                + ", ".join(f"{f} {getattr(spec, f):g} -> {v:g}" for f, v in values.items()),
                evidence={"role": role} | {f: getattr(spec, f) for f in values},
                threshold={f"node_max_{f}": getattr(node_max, f) for f in SIZE_FIELDS},
            )
        )
    return capped
