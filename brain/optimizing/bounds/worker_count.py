"""A plan over the job's limits first gives up workers, never below what the job needs."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import ROLE_CHIEF, ROLE_WORKER, RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import (
    bounds_dict,
    current_role,
    effective_roles,
    exceeded_limits,
    limits_dict,
    planned_totals,
    with_count,
)


def worker_count(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """The worker count reduced, one at a time, until the job's total fits its limits."""
    roles, job, nodes = proposal.roles, view.job, view.nodes
    # Node by node: a node migrated earlier keeps its own size (a PS moved to 13.4 cores
    # counts 13.4, not its role's 8), so adding nodes of the role cannot hide it.
    failed = view.failed_nodes
    over = exceeded_limits(planned_totals(roles, job, nodes, failed), job.limits)
    if not over:
        return proposal, []
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
        over = exceeded_limits(planned_totals(fewer, job, nodes, failed), job.limits)
    if count == start:
        return proposal, []
    # Back to what runs now is no change: the plan must not re-apply the same count.
    current = current_role(ROLE_WORKER, job, nodes).count
    unchanged = count == current
    fitted = with_count(roles, ROLE_WORKER, count, current)
    reason = Reason(
        GUARD,
        f"reduced workers from {start} to {count} to fit the job's limits"
        + (" (the count it runs now: no change)" if unchanged else ""),
        evidence={"workers_before": start, "workers_after": count},
        threshold=limits_dict(job.limits) | bounds_dict(job.bounds_of(ROLE_WORKER)),
    )
    return replace(proposal, roles=fitted), [reason]
