"""Last checks on what the optimizers of one stage proposed, before it becomes a plan.

``combine`` merges the proposals of several optimizers; ``enforce_bounds`` keeps the
result schedulable: no node above the largest node, no zero or negative size, every
role's count within its declared ``min_count``/``max_count``, the whole job within its
limits, and, when the running stage has a cluster state, no more new nodes than the
cluster has room for. Elastic workers (above ``min_count``) are given up first and added
last: they make room for the plan's other changes and are the nodes a shrinking plan
names for removal. Both are pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, Limits, Resources, RoleSpec
from brain.optimizing.cluster import ClusterView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import NodeChange, Proposal, Reason
from brain.optimizing.roles import (
    EPSILON,
    SIZE_FIELDS,
    bounds_dict,
    current_role,
    effective_roles,
    exceeded_limits,
    limits_dict,
    node_level_totals,
    overlay_roles,
    planned_totals,
    role_totals,
    roles_a_plan_may_set,
)
from brain.optimizing.size_cuts import cap_at_node_max, cut_sizes_to_limits
from brain.optimizing.step_bounds import with_cpu_budget, within_change_factor

GUARD = "guard"

# What callers have always imported from here.
__all__ = [
    "combine",
    "current_role",
    "effective_roles",
    "enforce_bounds",
    "exceeded_limits",
    "overlay_roles",
    "role_totals",
]


def combine(proposals: list[tuple[str, Proposal]]) -> Proposal:
    """Merge ``(optimizer name, proposal)`` pairs, in order, into one proposal.

    Roles merge field by field, a later non-None value overriding an earlier one (the
    override is recorded as a guard reason); lists are concatenated, except that a node
    migrated twice is migrated once with the larger of each size.
    """
    merged = Proposal()
    for name, proposal in proposals:
        for role, spec in proposal.roles.items():
            merged.roles[role] = _merge_role(role, merged.roles.get(role), spec, name, merged)
        merged.launch.extend(proposal.launch)
        merged.remove.extend(proposal.remove)
        merged.ps_hosts.extend(proposal.ps_hosts)
        merged.reasons.extend(proposal.reasons)
        for change in proposal.migrate:
            _merge_migration(merged.migrate, change)
        if proposal.source_event_id is not None:
            merged.source_event_id = proposal.source_event_id
    return merged


def _merge_role(
    role: str, earlier: RoleSpec | None, later: RoleSpec, optimizer: str, merged: Proposal
) -> RoleSpec:
    if earlier is None:
        return later
    for f in fields(RoleSpec):
        old, new = getattr(earlier, f.name), getattr(later, f.name)
        if old is not None and new is not None and old != new:
            merged.reasons.append(
                Reason(
                    GUARD,
                    f"{optimizer} overrides {role}.{f.name}: {old} -> {new}",
                    evidence={"role": role, "field": f.name, "earlier": old, "later": new},
                )
            )
    return earlier.overlay(later)


def _merge_migration(migrations: list[NodeChange], change: NodeChange) -> None:
    for i, existing in enumerate(migrations):
        if change.name is not None and (existing.role, existing.name) == (change.role, change.name):
            larger = {
                f: _max_or_none(getattr(existing, f), getattr(change, f)) for f in SIZE_FIELDS
            }
            migrations[i] = replace(existing, **larger)
            return
    migrations.append(change)


def _max_or_none(a: float | None, b: float | None) -> float | None:
    present = [v for v in (a, b) if v is not None]
    return max(present) if present else None


def enforce_bounds(
    proposal: Proposal,
    job: JobView,
    nodes: Sequence[NodeView],
    node_max: Resources,
    cluster: ClusterView | None = None,
    *,
    default_job_cpu: float | None = None,
    max_change_factor: float | None = None,
) -> Proposal:
    """A copy of ``proposal`` that the cluster can schedule and the job's bounds allow.

    Sizes above ``node_max`` are capped; zero or negative CPU and memory, negative GPU
    counts and negative role counts are dropped (left to the job's current value).
    Counts are clipped into each role's ``min_count``/``max_count`` (launches and
    removals too). If the job's total (role count x size, current values where the
    proposal has none) exceeds ``job.limits``, the worker count is reduced, never below
    ``min_count``, until it fits, and what still exceeds is fitted by cutting the roles'
    sizes (``size_cuts``: the plan's growth first; a role larger than the largest node
    is cut to it); workers the plan adds above ``min_count`` are given up
    before a launch or migration of the plan would be cut. A shrinking role names the
    nodes it removes: the highest indices, the elastic ones. With a ``cluster`` state,
    the nodes a plan adds (role counts above the current ones, then launches) must fit
    the cluster's room, free minus pending demand: workers are given up first, then
    other roles' growth, then launches; the state used is a reason of its own. Each
    change is a reason. A job without a CPU limit is held to ``default_job_cpu`` (the
    site's budget) where one is set, and a plan that is not an OOM fix changes no role's
    count or size by more than ``max_change_factor`` (``step_bounds``).
    """
    reasons = list(proposal.reasons)
    job = with_cpu_budget(job, default_job_cpu, reasons)
    roles = {
        role: _bounded_role(role, spec, node_max, reasons)
        for role, spec in _roles_the_job_has(proposal.roles, job, nodes, reasons).items()
    }
    roles = _within_counts(roles, job, nodes, reasons)
    if proposal.source_event_id is None:  # an OOM fix grows memory as far as it must
        roles = within_change_factor(roles, job, nodes, max_change_factor, reasons)
    roles = cap_at_node_max(roles, job, nodes, node_max, reasons)
    roles = _fit_limits(roles, job, nodes, reasons)
    roles = cut_sizes_to_limits(roles, job, nodes, reasons)
    launch = [_bounded_change("launch", c, node_max, reasons) for c in proposal.launch]
    launch, remove = _node_lists_within_counts(
        roles, launch, list(proposal.remove), job, nodes, reasons
    )
    replacements = _same_size_migrations(proposal.migrate, nodes)
    migrate = [_bounded_change("migrate", c, node_max, reasons) for c in proposal.migrate]
    migrate = _one_ps_change(roles, migrate, job, nodes, reasons)
    roles = _elastic_workers_last(roles, launch, migrate, job, nodes, reasons)
    launch, migrate = _fit_node_changes(roles, launch, migrate, job, nodes, reasons)
    ps_hosts = list(proposal.ps_hosts)
    if cluster is not None:
        planned_ps = roles.get(ROLE_PS)
        roles, launch = _fit_cluster(roles, launch, job, nodes, cluster, reasons)
        if roles.get(ROLE_PS) != planned_ps:
            ps_hosts = []  # named for the PS count that was cut; the store names the rest
    migrate += [c for c in proposal.migrate if c.name in replacements and c not in migrate]
    return replace(
        proposal,
        roles=roles,
        launch=launch,
        remove=_named_removals(roles, remove, nodes, reasons),
        migrate=migrate,
        ps_hosts=ps_hosts,
        reasons=reasons,
    )


def _within_counts(
    roles: dict[str, RoleSpec], job: JobView, nodes: Sequence[NodeView], reasons: list[Reason]
) -> dict[str, RoleSpec]:
    """Each planned count clipped into its role's bounds; a count clipped back to what
    the role runs now is no change (the role is left out when nothing else changes)."""
    kept = {}
    for role, spec in roles.items():
        bounds = job.bounds_of(role)
        if spec.count is None or bounds.clip(spec.count) == spec.count:
            kept[role] = spec
            continue
        clipped = bounds.clip(spec.count)
        side = "max_count" if clipped < spec.count else "min_count"
        current = current_role(role, job, nodes).count
        reasons.append(
            Reason(
                GUARD,
                f"clipped {role}.count from {spec.count} to {clipped}: the job's {side} "
                f"is {getattr(bounds, side)}"
                + (f" and {role} already runs {current}" if clipped == current else ""),
                evidence={"role": role, "count": spec.count, "current_count": current},
                threshold=bounds_dict(bounds),
            )
        )
        spec = replace(spec, count=None if clipped == current else clipped)
        if spec != RoleSpec():
            kept[role] = spec
    return kept


def _node_lists_within_counts(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    remove: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    reasons: list[Reason],
) -> tuple[list[NodeChange], list[NodeChange]]:
    """Launches and removals of a role whose count the plan does not set, cut where they
    would take it past ``max_count`` (the last launches) or below ``min_count``."""
    kept_launch, kept_remove = list(launch), list(remove)
    for role in dict.fromkeys(c.role for c in [*launch, *remove]):
        if roles.get(role, RoleSpec()).count is not None:
            continue  # the count decides; the lists name nodes
        bounds = job.bounds_of(role)
        current = current_role(role, job, nodes).count or 0
        launches = sum(1 for c in kept_launch if c.role == role)
        wanted = current + launches - sum(1 for c in kept_remove if c.role == role)
        allowed = bounds.clip(wanted)
        if allowed == wanted:
            continue
        # The last ones of the role go (equal changes are told apart by position).
        if allowed < wanted:
            kept_launch = _without_last(kept_launch, role, wanted - allowed)
        else:
            kept_remove = _without_last(kept_remove, role, allowed - wanted)
        kind = "launch" if allowed < wanted else "removal"
        reasons.append(
            Reason(
                GUARD,
                f"dropped {abs(wanted - allowed)} {kind}(s) of {role}: {current} -> {wanted} "
                f"nodes would leave its bounds, {allowed} allowed",
                evidence={"role": role, "current_count": current, "wanted_count": wanted},
                threshold=bounds_dict(bounds),
            )
        )
    return kept_launch, kept_remove


def _roles_the_job_has(
    roles: Mapping[str, RoleSpec], job: JobView, nodes: Sequence[NodeView], reasons: list[Reason]
) -> dict[str, RoleSpec]:
    """Roles the job declares or runs, and the trainer roles of its strategy (all of them
    if it declares and runs none), without a count of 0 it did not ask for: a master
    would create an unknown replica type or kill a role."""
    known = roles_a_plan_may_set(job, nodes)
    kept = {}
    for role, spec in roles.items():
        if known and role not in known:
            reasons.append(
                Reason(
                    GUARD,
                    f"dropped {role}: the job has no such role and it is not a trainer role "
                    f"of a {job.strategy.value} job",
                    evidence={"role": role, "job_roles": sorted(known)},
                )
            )
            continue
        declared = job.roles.get(role, RoleSpec()).count
        if spec.count == 0 and declared != 0:
            reasons.append(
                Reason(
                    GUARD,
                    f"dropped {role}.count=0: the job asked for {declared} and a plan does not "
                    "remove a whole role",
                    evidence={"role": role, "declared_count": declared},
                )
            )
            spec = replace(spec, count=None)
        if spec != RoleSpec():
            kept[role] = spec
    return kept


def _caps(node_max: Resources) -> dict[str, float]:
    return {
        "cpu": node_max.cpu,
        "cpu_limit": node_max.cpu,
        "memory_mib": node_max.memory_mib,
        "gpu": node_max.gpu,
    }


def _bounded_value(
    label: str, field: str, value: float | None, cap: float, reasons: list[Reason]
) -> float | None:
    if value is None:
        return None
    # A GPU count may be zero (CPU-only); any other size must be positive.
    invalid = value < 0 if field == "gpu" else value <= 0
    if invalid:
        reasons.append(
            Reason(
                GUARD, f"dropped {label}.{field}={value}: sizes must be positive", {"value": value}
            )
        )
        return None
    if value > cap:
        reasons.append(
            Reason(
                GUARD,
                f"capped {label}.{field} from {value} to the largest node's {cap}",
                evidence={"value": value},
                threshold={"node_max": cap},
            )
        )
        return cap
    return value


def _bounded_role(
    role: str, spec: RoleSpec, node_max: Resources, reasons: list[Reason]
) -> RoleSpec:
    caps = _caps(node_max)
    values = {f: _bounded_value(role, f, getattr(spec, f), caps[f], reasons) for f in caps}
    count = spec.count
    if count is not None and count < 0:
        reasons.append(Reason(GUARD, f"dropped {role}.count={count}: counts cannot be negative"))
        count = None
    return RoleSpec(count=count, **values)


def _bounded_change(
    kind: str, change: NodeChange, node_max: Resources, reasons: list[Reason]
) -> NodeChange:
    caps = _caps(node_max)
    label = f"{kind} {change.name or change.role}"
    values = {
        f: _bounded_value(label, f, getattr(change, f), caps[f], reasons) for f in SIZE_FIELDS
    }
    return replace(change, **values)


def _fit_limits(
    roles: dict[str, RoleSpec], job: JobView, nodes: Sequence[NodeView], reasons: list[Reason]
) -> dict[str, RoleSpec]:
    # Node by node: a node migrated earlier keeps its own size (a PS moved to 13.4 cores
    # counts 13.4, not its role's 8), so adding nodes of the role cannot hide it.
    over = exceeded_limits(planned_totals(roles, job, nodes), job.limits)
    if not over:
        return roles
    effective = effective_roles(roles, job, nodes)
    worker = effective.get(ROLE_WORKER, RoleSpec(count=0))
    has_chief = bool(effective.get(ROLE_CHIEF, RoleSpec()).count)
    # Without a chief the last worker is what trains: keep it; nor does a plan take a
    # role that runs down to 0 (a master would kill the role). Below min_count the job
    # would not run at all. What workers cannot fit, smaller sizes do (size_cuts).
    running = bool(current_role(ROLE_WORKER, job, nodes).count)
    keep_one = running or not has_chief
    min_workers = max(1 if keep_one else 0, job.bounds_of(ROLE_WORKER).min_count or 0)
    start = count = worker.count or 0
    planned_worker = roles.get(ROLE_WORKER, RoleSpec())
    while over and count > min_workers:
        count -= 1
        fewer = roles | {ROLE_WORKER: replace(planned_worker, count=count)}
        over = exceeded_limits(planned_totals(fewer, job, nodes), job.limits)
    fitted = dict(roles)
    if count != start:
        # Back to what runs now is no change: the plan must not re-apply the same count.
        unchanged = count == current_role(ROLE_WORKER, job, nodes).count
        spec = replace(planned_worker, count=None if unchanged else count)
        if spec == RoleSpec():
            fitted.pop(ROLE_WORKER, None)
        else:
            fitted[ROLE_WORKER] = spec
        reasons.append(
            Reason(
                GUARD,
                f"reduced workers from {start} to {count} to fit the job's limits"
                + (" (the count it runs now: no change)" if unchanged else ""),
                evidence={"workers_before": start, "workers_after": count},
                threshold=limits_dict(job.limits) | bounds_dict(job.bounds_of(ROLE_WORKER)),
            )
        )
    return fitted


def _one_ps_change(
    roles: dict[str, RoleSpec],
    migrate: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    reasons: list[Reason],
) -> list[NodeChange]:
    """A plan that adds PS does not also move a PS to more CPU: the new PS take load off
    every PS, and the tier changes once (a memory fix still goes through)."""
    planned = roles.get(ROLE_PS, RoleSpec()).count
    current = current_role(ROLE_PS, job, nodes).count or 0
    if planned is None or planned <= current:
        return migrate
    sizes = {n.name: n for n in nodes}
    kept = []
    for change in migrate:
        node = sizes.get(change.name or "")
        more_cpu = node is not None and (change.cpu or 0.0) > node.cpu + EPSILON
        more_memory = node is not None and (change.memory_mib or 0.0) > node.memory_mib + EPSILON
        if change.role == ROLE_PS and more_cpu and not more_memory:
            reasons.append(
                Reason(
                    GUARD,
                    f"dropped the migration of {change.name} to {change.cpu:g} cores: the plan "
                    f"adds PS ({current} -> {planned}), which takes load off every PS; one PS "
                    "change at a time",
                    evidence={"node": change.name, "ps_count": current, "ps_planned": planned},
                )
            )
            continue
        kept.append(change)
    return kept


def _without_last(changes: list[NodeChange], role: str, drop: int) -> list[NodeChange]:
    positions = [i for i, c in enumerate(changes) if c.role == role][-drop:]
    return [c for i, c in enumerate(changes) if i not in positions]


def _elastic_workers_last(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    migrate: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    reasons: list[Reason],
) -> dict[str, RoleSpec]:
    """Workers the plan adds above ``min_count`` (and above what runs now) are given up,
    one at a time, while a launch or migration of the same plan would otherwise be cut:
    elastic workers come after the nodes a job needs."""
    planned = roles.get(ROLE_WORKER, RoleSpec()).count
    if planned is None or not (launch or migrate):
        return roles
    current = current_role(ROLE_WORKER, job, nodes).count or 0
    floor = max(current, job.bounds_of(ROLE_WORKER).min_count or 0)
    count = planned
    while count > floor and _cuts_node_changes(
        roles | {ROLE_WORKER: replace(roles[ROLE_WORKER], count=count)},
        launch,
        migrate,
        job,
        nodes,
    ):
        count -= 1
    if count == planned:
        return roles
    reasons.append(
        Reason(
            GUARD,
            f"gave up {planned - count} elastic worker(s) ({planned} -> {count}) so that the "
            "plan's launches and migrations fit the job's limits: elastic workers are added last",
            evidence={"workers_planned": planned, "workers_after": count, "workers_now": current},
            threshold=limits_dict(job.limits) | bounds_dict(job.bounds_of(ROLE_WORKER)),
        )
    )
    fitted = dict(roles)
    worker = replace(roles[ROLE_WORKER], count=None if count == current else count)
    if worker == RoleSpec():
        del fitted[ROLE_WORKER]
    else:
        fitted[ROLE_WORKER] = worker
    return fitted


def _cuts_node_changes(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    migrate: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
) -> bool:
    cuts: list[Reason] = []  # a reason is written for every growth cut or launch dropped
    _fit_node_changes(roles, launch, migrate, job, nodes, cuts)
    return bool(cuts)


def _named_removals(
    roles: dict[str, RoleSpec],
    remove: list[NodeChange],
    nodes: Sequence[NodeView],
    reasons: list[Reason],
) -> list[NodeChange]:
    """Removals naming the nodes a shrinking role gives up: its highest indices, which
    are the elastic ones above ``min_count`` (the last added), so the master removes
    exactly those and the job's record knows which went."""
    removals = list(remove)
    for role, spec in roles.items():
        if spec.count is None:
            continue
        named = {c.name for c in removals if c.role == role}
        staying = sorted(
            (n for n in nodes if n.role == role and n.name not in named), key=lambda n: n.index
        )
        surplus = staying[spec.count :][::-1]
        if not surplus:
            continue
        removals += [NodeChange(role=role, name=n.name) for n in surplus]
        reasons.append(
            Reason(
                GUARD,
                f"{role} goes from {len(staying) + len(named)} to {spec.count} nodes: removes "
                + ", ".join(n.name for n in surplus)
                + " (highest index first: the elastic ones)",
                evidence={"role": role, "removed": [n.name for n in surplus]},
            )
        )
    return removals


def _fit_cluster(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    cluster: ClusterView,
    reasons: list[Reason],
) -> tuple[dict[str, RoleSpec], list[NodeChange]]:
    """Role growth and launches within the cluster's room (free minus pending demand,
    per resource whose free amount is known). Resizes and migrations are not growth:
    they fix a node the job already runs."""
    room = cluster.room()
    short = cluster.shortfall()
    reasons.append(
        Reason(
            GUARD,
            cluster.summary() + (f"; short by {_amounts(short)}" if short else "; not short"),
            evidence=cluster.evidence(),
            threshold={f"short_margin_{r}": getattr(cluster.short_margin, r) for r in SIZE_FIELDS},
        )
    )
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
        spec = replace(roles[role], count=None if count == current[role] else count)
        if spec == RoleSpec():
            del fitted[role]
        else:
            fitted[role] = spec
    left = {f: room[f] - used for f, used in growth(counts).items() if f in room}
    kept = []
    for change in launch:
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
    return fitted, kept


def _fits_room(need: Mapping[str, float], room: Mapping[str, float]) -> bool:
    """Whether ``need`` fits ``room`` in every resource whose room is known (a resource
    not needed always fits, even where more is pending than free)."""
    return all(need.get(f, 0.0) <= EPSILON or need[f] <= room[f] + EPSILON for f in room)


def _amounts(values: Mapping[str, float]) -> str:
    units = {"cpu": "cores", "memory_mib": "MiB", "gpu": "GPUs"}
    return ", ".join(f"{values[f]:g} {units[f]}" for f in SIZE_FIELDS if f in values)


def _same_size_migrations(migrate: Sequence[NodeChange], nodes: Sequence[NodeView]) -> set[str]:
    """Nodes asked to move to a fresh node at their own size (a slow node replaced): they
    grow nothing, so they need no headroom, and are kept although they change no size."""
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


def _fit_node_changes(
    roles: dict[str, RoleSpec],
    launch: list[NodeChange],
    migrate: list[NodeChange],
    job: JobView,
    nodes: Sequence[NodeView],
    reasons: list[Reason],
) -> tuple[list[NodeChange], list[NodeChange]]:
    """Launches and migrations within what the roles leave of the job's limits.

    A migration's growth is cut to the headroom left (a reason says so), or dropped
    when nothing is left; a launch that does not fit is dropped. Shrinking is free.
    """
    used = node_level_totals(roles, job, nodes)
    sizes = {n.name: n for n in nodes}
    fitted_migrate = []
    for change in migrate:
        node = sizes.get(change.name or "")
        current = {f: (getattr(node, f) if node else 0.0) for f in SIZE_FIELDS}
        fitted = _within_headroom(change, current, used, job.limits, "migrate", reasons)
        if fitted is not None:
            fitted_migrate.append(fitted)
    fitted_launch = []
    for change in launch:
        empty = dict.fromkeys(SIZE_FIELDS, 0.0)
        fitted = _within_headroom(change, empty, used, job.limits, "launch", reasons)
        if fitted == change:
            fitted_launch.append(fitted)
        else:  # a smaller node than asked for is not what the optimizer meant
            reasons.append(
                Reason(GUARD, f"dropped the launch of a {change.role}: it does not fit the limits")
            )
    return fitted_launch, fitted_migrate


def _within_headroom(
    change: NodeChange,
    current: dict[str, float],
    used: dict[str, float],
    limits: Limits,
    kind: str,
    reasons: list[Reason],
) -> NodeChange | None:
    """``change`` with each growth cut to the headroom left; None if it no longer changes
    anything. ``used`` is charged with what is granted."""
    values: dict[str, float | None] = {}
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
        return None
    return replace(change, **values)
