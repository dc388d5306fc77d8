"""Launches and migrations within what the roles leave of the job's limits.

A migration's growth is cut to the headroom left (a reason says so), or dropped when
nothing is left; a launch that does not fit is dropped. Shrinking is free, and what a
shrinking migration frees is headroom for the plan's growths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import Limits, RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import GUARD, NodeChange, Proposal, Reason
from brain.optimizing.roles import (
    EPSILON,
    SIZE_FIELDS,
    current_role,
    node_level_totals,
    role_resized,
)


def node_changes(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    launch, migrate, reasons = fit_node_changes(
        proposal.roles, proposal.launch, proposal.migrate, view.job, view.nodes, view.failed_nodes
    )
    return replace(proposal, launch=launch, migrate=migrate), reasons


def fit_node_changes(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    migrate: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    failed: Sequence[NodeView] = (),
) -> tuple[list[NodeChange], list[NodeChange], list[Reason]]:
    """``(launches, migrations, reasons)``: the changes that fit once ``roles`` apply,
    migrations first, and a reason for every growth cut or launch dropped."""
    used = node_level_totals(roles, job, nodes, failed)
    sizes = {n.name: n for n in nodes}
    befores = [size_once_roles_apply(sizes.get(c.name or ""), roles, job, nodes) for c in migrate]
    # What the plan's shrinking migrations free is headroom for its growths: the whole
    # plan is applied at once (hot_ps grows a hot PS with cores the others give up).
    for change, current in zip(migrate, befores, strict=True):
        for f in SIZE_FIELDS:
            wanted = getattr(change, f)
            if wanted is not None and wanted < current[f]:
                used[f] -= current[f] - wanted
    reasons: list[Reason] = []
    fitted_migrate = []
    for change, current in zip(migrate, befores, strict=True):
        fitted, used, why = _within_headroom(change, current, used, job.limits, "migrate")
        reasons += why
        if fitted is not None:
            fitted_migrate.append(fitted)
    fitted_launch = []
    for change in launch:
        empty = dict.fromkeys(SIZE_FIELDS, 0.0)
        fitted, used, why = _within_headroom(change, empty, used, job.limits, "launch")
        reasons += why
        if fitted == change:
            fitted_launch.append(fitted)
        else:  # a smaller node than asked for is not what the optimizer meant
            reasons.append(
                Reason(GUARD, f"dropped the launch of a {change.role}: it does not fit the limits")
            )
    return fitted_launch, fitted_migrate, reasons


def size_once_roles_apply(
    node: NodeView | None, roles: dict[str, RoleSpec], job: JobView, nodes: Sequence[NodeView]
) -> dict[str, float]:
    """What ``node`` runs with once ``roles`` apply, before its migration: the role's
    whole size where the plan resizes the role in any size (the master relaunches every
    node of it at that size), else its own. A migration that carries a node's 7.2 cores
    while the plan's role gives its PS 1.3 adds 5.9 cores, not nothing; so does one that
    keeps a PS's 3.1 cores while the plan gives its role only a new memory."""
    if node is None:
        return dict.fromkeys(SIZE_FIELDS, 0.0)
    planned = roles.get(node.role, RoleSpec())
    now = current_role(node.role, job, nodes)
    if not role_resized(planned, now):
        return {f: getattr(node, f) for f in SIZE_FIELDS}
    spec = now.overlay(planned)
    return {f: getattr(spec, f) or 0.0 for f in SIZE_FIELDS}


def _within_headroom(
    change: NodeChange,
    current: dict[str, float],
    used: dict[str, float],
    limits: Limits,
    kind: str,
) -> tuple[NodeChange | None, dict[str, float], list[Reason]]:
    """``(change, used, reasons)``: ``change`` with each growth cut to the headroom left
    (None if it no longer changes anything), and ``used`` charged with what is granted."""
    used = dict(used)
    values: dict[str, float | None] = {}
    reasons = []
    for f in SIZE_FIELDS:
        wanted, limit = getattr(change, f), getattr(limits, f)
        if wanted is None or limit is None or wanted <= current[f]:
            values[f] = wanted
            continue
        granted = min(wanted, current[f] + max(limit - used[f], 0.0))
        if granted < wanted - EPSILON:
            outcome = f"granted {granted:g}" if granted > current[f] + EPSILON else "gave it up"
            reasons.append(
                Reason(
                    GUARD,
                    f"{kind} {change.name or change.role}: {f} {current[f]:g} -> {wanted:g} "
                    f"would exceed the job's {f} limit {limit:g} ({used[f]:g} requested): "
                    f"{outcome}",
                    evidence={"wanted": wanted, "current": current[f], "requested": used[f]},
                    threshold={f"limit_{f}": limit},
                )
            )
        values[f] = max(granted, current[f])
        used[f] += values[f] - current[f]
    if all(values[f] is None or abs(values[f] - current[f]) <= EPSILON for f in SIZE_FIELDS):
        return None, used, reasons
    return replace(change, **values), used, reasons
