"""Elastic workers come after the nodes a job needs: workers the plan adds above
``min_count`` (and above what runs now) are given up, one at a time, while a launch or
migration of the same plan would otherwise be cut. Where none of the added workers is
left and the plan made every worker smaller to fit them, the workers keep their size of
today unless the launches and migrations, or the job's limits themselves (a job running
above a limit lowered since), need the cores the smaller size frees: then they get the
most between the two sizes that fits. The reason says which."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import ROLE_WORKER, RoleSpec
from brain.optimizing.bounds.node_changes import fit_node_changes
from brain.optimizing.bounds.units import step
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import (
    bounds_dict,
    current_role,
    exceeded_limits,
    limits_dict,
    planned_totals,
    with_count,
    with_spec,
)

# Worker sizes between the plan's and today's are tried in the guard's CPU step.
CPU_STEP = step("cpu", 1.0)


def elastic_workers(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    roles, job, nodes = proposal.roles, view.job, view.nodes
    planned = roles.get(ROLE_WORKER, RoleSpec()).count
    if planned is None or not (proposal.launch or proposal.migrate):
        return proposal, []
    today = current_role(ROLE_WORKER, job, nodes)
    current = today.count or 0
    floor = max(current, job.bounds_of(ROLE_WORKER).min_count or 0)
    count = planned
    while count > floor and _cuts_node_changes(
        replace(proposal, roles=roles | {ROLE_WORKER: replace(roles[ROLE_WORKER], count=count)}),
        view,
    ):
        count -= 1
    if count == planned:
        return proposal, []
    fitted = with_count(roles, ROLE_WORKER, count, current)
    kept = ""
    evidence = {"workers_planned": planned, "workers_after": count, "workers_now": current}
    smaller = fitted.get(ROLE_WORKER, RoleSpec()).cpu
    if count <= current and today.cpu and smaller is not None and smaller < today.cpu - 1e-9:
        size = _largest_that_fits(proposal, fitted, smaller, today.cpu, view)
        if size >= today.cpu - 1e-9:
            fitted = with_spec(
                fitted, ROLE_WORKER, replace(fitted[ROLE_WORKER], cpu=None, cpu_limit=None)
            )
            kept = (
                f"; with none added, the workers keep their {today.cpu:g} cores (the plan made "
                f"them {smaller:g} to fit the ones given up)"
            )
            evidence["worker_cpu_kept"] = today.cpu
        elif size > smaller + 1e-9:
            fitted = with_spec(
                fitted, ROLE_WORKER, replace(fitted[ROLE_WORKER], cpu=size, cpu_limit=None)
            )
            kept = (
                f"; with none added, the workers go {today.cpu:g} -> {size:g} cores, the most "
                "that fits the job's limits beside the launches and migrations (the plan made "
                f"them {smaller:g} to fit the ones given up)"
            )
        else:
            kept = (
                f"; with none added, the workers still go {today.cpu:g} -> {smaller:g} cores: "
                "the job's limits, the launches and the migrations need the cores that frees"
            )
    reason = Reason(
        GUARD,
        f"gave up {planned - count} elastic worker(s) ({planned} -> {count}) so that the "
        "plan's launches and migrations fit the job's limits: elastic workers are added "
        f"last{kept}",
        evidence=evidence,
        threshold=limits_dict(job.limits) | bounds_dict(job.bounds_of(ROLE_WORKER)),
    )
    return replace(proposal, roles=fitted), [reason]


def _largest_that_fits(
    proposal: Proposal, roles: dict[str, RoleSpec], smaller: float, today: float, view: BoundsView
) -> float:
    """The most cores per worker, from ``smaller`` up to ``today``, in hundredths of a
    core, at which the roles stay within the job's limits and no launch or migration is
    cut; ``smaller`` when no larger size does (the guard's later steps fit the node
    changes to what it leaves)."""

    def fits(cpu: float) -> bool:
        sized = with_spec(roles, ROLE_WORKER, replace(roles[ROLE_WORKER], cpu=cpu))
        totals = planned_totals(sized, view.job, view.nodes, view.failed_nodes)
        if exceeded_limits(totals, view.job.limits):
            return False
        return not _cuts_node_changes(replace(proposal, roles=sized), view)

    if fits(today):
        return today
    # Counted in steps above ``smaller``: ``low`` fits (or is 0), above ``high`` nothing
    # does; fitting only gets harder as the workers grow.
    low, high = 0, round((today - smaller) / CPU_STEP)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(round(smaller + middle * CPU_STEP, 6)):
            low = middle
        else:
            high = middle - 1
    return round(smaller + low * CPU_STEP, 6)


def _cuts_node_changes(proposal: Proposal, view: BoundsView) -> bool:
    """Whether fitting the launches and migrations to the limits would cut one (a reason
    is written for every growth cut or launch dropped)."""
    _, _, cuts = fit_node_changes(
        proposal.roles, proposal.launch, proposal.migrate, view.job, view.nodes, view.failed_nodes
    )
    return bool(cuts)
