"""Role arithmetic: what a job's roles run with now, once a plan applies, and in total.

Shared by the bounding steps and the optimizers that size against the job's limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from brain.domain import ROLE_PS, ROLE_WORKER, Limits, Resources, RoleBounds, RoleSpec, Strategy
from brain.optimizing.context import JobView, NodeView

SIZE_FIELDS = ("cpu", "memory_mib", "gpu")
# Roles whose nodes share one total between them: a PS holds its shard of the model. The
# others (workers, a chief) each hold a whole replica, whatever the count.
SHARDED_ROLES = (ROLE_PS,)
# Tolerance for float sums compared against limits.
EPSILON = 1e-9


# Roles a plan may add beside the job's own: the trainers of its strategy. DLRover has
# the worker replica type in every job, so a PS job registered as chief + PS (the
# design's start) gains workers; nothing else is invented.
STRATEGY_TRAINERS = {Strategy.ps: (ROLE_WORKER,), Strategy.allreduce: (ROLE_WORKER,)}


def roles_a_plan_may_set(job: JobView, nodes: Sequence[NodeView]) -> set[str]:
    """The roles the job declares or runs, and its strategy's trainer roles (none if it
    declares and runs none: then every role is new)."""
    known = set(job.roles) | {n.role for n in nodes}
    if not known:
        return known
    return known | set(STRATEGY_TRAINERS.get(job.strategy, ()))


def current_role(role: str, job: JobView, nodes: Sequence[NodeView]) -> RoleSpec:
    """What ``role`` runs with now: the job's role spec, completed from its live nodes."""
    spec = job.roles.get(role, RoleSpec())
    role_nodes = [n for n in nodes if n.role == role]

    def from_nodes(attr: str) -> float | None:
        return max(getattr(n, attr) for n in role_nodes) if role_nodes else None

    return RoleSpec(
        count=len(role_nodes) if spec.count is None else spec.count,
        cpu=from_nodes("cpu") if spec.cpu is None else spec.cpu,
        memory_mib=from_nodes("memory_mib") if spec.memory_mib is None else spec.memory_mib,
        gpu=from_nodes("gpu") if spec.gpu is None else spec.gpu,
        cpu_limit=spec.cpu_limit,
    )


def effective_roles(
    roles: Mapping[str, RoleSpec], job: JobView, nodes: Sequence[NodeView]
) -> dict[str, RoleSpec]:
    """The roles as they would run: proposed values where set, current ones elsewhere."""
    # Roles only the proposal has are completed like the others (count 0 without nodes).
    names = dict.fromkeys([*job.roles, *(n.role for n in nodes), *roles])
    return overlay_roles({name: current_role(name, job, nodes) for name in names}, roles)


def overlay_roles(
    current: Mapping[str, RoleSpec], proposed: Mapping[str, RoleSpec]
) -> dict[str, RoleSpec]:
    """Every role of either side, field by field the proposed value, else the current one."""
    return {
        name: current.get(name, RoleSpec()).overlay(proposed.get(name))
        for name in dict.fromkeys([*current, *proposed])
    }


def with_count(
    roles: Mapping[str, RoleSpec], role: str, count: int, current: int | None
) -> dict[str, RoleSpec]:
    """``roles`` with ``role``'s count set to ``count``. A count back at ``current`` (what
    the role runs now) is no change, and a role left with no change at all is dropped:
    a plan neither re-applies a count nor supersedes a pending plan with nothing."""
    spec = replace(roles.get(role, RoleSpec()), count=None if count == current else count)
    return with_spec(roles, role, spec)


def with_spec(roles: Mapping[str, RoleSpec], role: str, spec: RoleSpec) -> dict[str, RoleSpec]:
    """``roles`` with ``role`` set to ``spec``, dropped when ``spec`` changes nothing."""
    changed = dict(roles)
    if spec == RoleSpec():
        changed.pop(role, None)
    else:
        changed[role] = spec
    return changed


def role_totals(roles: Mapping[str, RoleSpec]) -> Resources:
    """Sum of count x size over roles (CPU by request); unknown values count as 0."""

    def total(attr: str) -> float:
        return sum((spec.count or 0) * (getattr(spec, attr) or 0.0) for spec in roles.values())

    return Resources(cpu=total("cpu"), memory_mib=total("memory_mib"), gpu=total("gpu"))


def exceeded_limits(totals: Resources, limits: Limits) -> dict[str, tuple[float, float]]:
    """``{resource: (total, limit)}`` for every limit that ``totals`` goes over."""
    over = {}
    for attr in SIZE_FIELDS:
        limit = getattr(limits, attr)
        value = getattr(totals, attr)
        if limit is not None and value > limit + EPSILON:
            over[attr] = (value, limit)
    return over


def node_level_totals(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    failed: Sequence[NodeView] = (),
) -> dict[str, float]:
    """The job's total request once ``roles`` apply: existing nodes keep their own
    request (a node migrated earlier may differ from its role) unless the role is
    resized, in any of its sizes: the master then relaunches every node of it at the
    role's whole size (a new memory takes a PS migrated to 3.1 cores back to the role's
    0.92); places of the count beyond them are new nodes of the role's size, or
    ``failed`` nodes of the role coming back: the master may relaunch one as it was
    (a PS migrated to 8.7 cores comes back at 8.7, not at its role's 3.8) or start a
    new one, so each counts the larger of its own size and the role's."""
    totals = dict.fromkeys(SIZE_FIELDS, 0.0)
    for role, spec in effective_roles(roles, job, nodes).items():
        planned = roles.get(role, RoleSpec())
        now = current_role(role, job, nodes)
        existing = sorted((n for n in nodes if n.role == role), key=lambda n: n.index)
        count = spec.count or 0
        kept = existing[:count]
        missing = max(count - len(kept), 0)
        resized = role_resized(planned, now)
        for f in SIZE_FIELDS:
            role_size = getattr(spec, f) or 0.0
            own = sum(role_size if resized else (getattr(n, f) or role_size) for n in kept)
            back = [] if resized else [getattr(n, f) for n in failed if n.role == role]
            returning = [max(size, role_size) for size in sorted(back, reverse=True)[:missing]]
            totals[f] += own + sum(returning) + (missing - len(returning)) * role_size
    return totals


def role_resized(planned: RoleSpec, now: RoleSpec) -> bool:
    """Whether ``planned`` changes any size of the role: a plan that repeats the role's
    size resizes nothing (a master relaunches nodes only when the size changes, so a
    node migrated to its own size keeps it)."""
    return any(getattr(planned, f) not in (None, getattr(now, f)) for f in SIZE_FIELDS)


def bounds_dict(bounds: RoleBounds) -> dict[str, int]:
    return {
        side: getattr(bounds, side)
        for side in ("min_count", "max_count")
        if getattr(bounds, side) is not None
    }


def planned_totals(
    roles: dict[str, RoleSpec],
    job: JobView,
    nodes: Sequence[NodeView],
    failed: Sequence[NodeView] = (),
) -> Resources:
    return Resources(**node_level_totals(roles, job, nodes, failed))


def limits_dict(limits: Limits) -> dict[str, float]:
    return {
        attr: getattr(limits, attr) for attr in SIZE_FIELDS if getattr(limits, attr) is not None
    }
