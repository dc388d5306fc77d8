"""A role that runs (or was registered) larger than the largest node is cut to it."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import EPSILON, SIZE_FIELDS, effective_roles


def largest_node(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    node_max = view.node_max
    capped = dict(proposal.roles)
    reasons = []
    for role, spec in effective_roles(proposal.roles, view.job, view.nodes).items():
        values = {}
        for field in SIZE_FIELDS:
            size, cap = getattr(spec, field), getattr(node_max, field)
            if size is not None and size > cap + EPSILON:
                values[field] = cap
        if spec.cpu_limit is not None and spec.cpu_limit > node_max.cpu + EPSILON:
            values["cpu_limit"] = node_max.cpu
        if not values or not spec.count:
            continue
        capped[role] = replace(proposal.roles.get(role, RoleSpec()), **values)
        reasons.append(
            Reason(
                GUARD,
                f"cut {role} to the largest node: "
                + ", ".join(f"{f} {getattr(spec, f):g} -> {v:g}" for f, v in values.items()),
                evidence={"role": role} | {f: getattr(spec, f) for f in values},
                threshold={f"node_max_{f}": getattr(node_max, f) for f in SIZE_FIELDS},
            )
        )
    return replace(proposal, roles=capped), reasons
