"""With a cluster state, the nodes a plan adds fit the cluster's room.

Role growth and launches stay within the cluster's room (free minus pending demand, per
resource whose free amount is known): workers are given up first, then the other roles'
growth, by name, then launches. Resizes and migrations are not growth: they fix a node
the job already runs. The state used is a reason of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from brain.domain import ROLE_PS, ROLE_WORKER, RoleSpec
from brain.optimizing.bounds.shard_memory import resharded, share_mib
from brain.optimizing.bounds.units import UNITS, floor_to
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.cluster import ClusterView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import (
    EPSILON,
    SHARDED_ROLES,
    SIZE_FIELDS,
    current_role,
    effective_roles,
    exceeded_limits,
    planned_totals,
    with_count,
)


def cluster_room(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    cluster = view.cluster
    if cluster is None:
        return proposal, []
    roles, job, nodes = proposal.roles, view.job, view.nodes
    room = cluster.room()
    reasons = [_state_used(cluster)]
    effective = effective_roles(roles, job, nodes)
    current = {role: current_role(role, job, nodes).count or 0 for role in effective}

    def growth(counts: Mapping[str, int]) -> dict[str, float]:
        return {
            f: sum(
                max(counts[role] - current[role], 0) * (getattr(effective[role], f) or 0.0)
                for role in counts
            )
            for f in SIZE_FIELDS
        }

    wanted = {role: effective[role].count or 0 for role in roles if roles[role].count is not None}
    counts = dict(wanted)
    # Workers are given up first, then the other roles' growth, by name.
    for role in sorted(counts, key=lambda r: (r != ROLE_WORKER, r)):
        while counts[role] > current[role] and not _fits_room(growth(counts), room):
            counts[role] -= 1
    fitted = dict(roles)
    for role, count in counts.items():
        if count == wanted[role]:
            continue
        need = growth({role: wanted[role]})
        reasons.append(
            Reason(
                GUARD,
                f"{role} {current[role]} -> {wanted[role]} cut to {count}: "
                f"{wanted[role] - current[role]} more need {_amounts(need)}, the cluster has "
                f"room for {_amounts(room)} (free minus pending demand)",
                evidence={"wanted": wanted[role], "granted": count, "need": need, "room": room},
            )
        )
        # Back at the current count, the plan leaves the count alone (and the role, when
        # the count was all it changed), so nothing empty supersedes a pending plan.
        fitted = with_count(fitted, role, count, current[role])
        fitted, why = _reshard(fitted, role, wanted[role], count, view)
        reasons += why
    left = {f: room[f] - used for f, used in growth(counts).items() if f in room}
    kept = []
    for change in proposal.launch:
        need = {f: getattr(change, f) or 0.0 for f in SIZE_FIELDS}
        if _fits_room(need, left):
            kept.append(change)
            left = {f: left[f] - need[f] for f in left}
        else:
            reasons.append(
                Reason(
                    GUARD,
                    f"dropped the launch of a {change.role}: it needs {_amounts(need)}, the "
                    f"cluster has room for {_amounts(left)}",
                    evidence={"need": need, "room": left},
                )
            )
    # PS hosts were named for the PS count that was cut; the store names the rest.
    ps_hosts = proposal.ps_hosts if fitted.get(ROLE_PS) == roles.get(ROLE_PS) else []
    return replace(proposal, roles=fitted, launch=kept, ps_hosts=ps_hosts), reasons


def _reshard(
    roles: dict[str, RoleSpec], role: str, wanted: int, granted: int, view: BoundsView
) -> tuple[dict[str, RoleSpec], list[Reason]]:
    """A sharded role's memory, sized for ``wanted`` nodes, shared over the ``granted``
    ones (``shard_memory``'s rule), rounded down rather than past the job's memory
    limit: the total stays what the limits let through."""
    planned = roles.get(role, RoleSpec())
    if role not in SHARDED_ROLES or planned.memory_mib is None or not granted:
        return roles, []
    total = planned.memory_mib * wanted
    need = share_mib(total, granted)
    resized = roles | {role: replace(planned, memory_mib=need)}
    if "memory_mib" in exceeded_limits(
        planned_totals(resized, view.job, view.nodes, view.failed_nodes), view.job.limits
    ):
        need = floor_to(total / granted, 1.0)
        resized = roles | {role: replace(planned, memory_mib=need)}
    if need <= planned.memory_mib + EPSILON:
        return roles, []
    return resized, [resharded(role, wanted, granted, total, planned.memory_mib, need)]


def _state_used(cluster: ClusterView) -> Reason:
    short = cluster.shortfall()
    return Reason(
        GUARD,
        cluster.summary() + (f"; short by {_amounts(short)}" if short else "; not short"),
        evidence=cluster.evidence(),
        threshold={f"short_margin_{r}": getattr(cluster.short_margin, r) for r in SIZE_FIELDS},
    )


def _fits_room(need: Mapping[str, float], room: Mapping[str, float]) -> bool:
    """Whether ``need`` fits ``room`` in every resource whose room is known (a resource
    not needed always fits, even where more is pending than free)."""
    return all(need.get(f, 0.0) <= EPSILON or need[f] <= room[f] + EPSILON for f in room)


def _amounts(values: Mapping[str, float]) -> str:
    return ", ".join(f"{values[f]:g} {UNITS[f]}" for f in SIZE_FIELDS if f in values)
