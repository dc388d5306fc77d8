"""A plan sets only roles the job has, and removes no whole role: a master would create
an unknown replica type or kill a role."""

from __future__ import annotations

from dataclasses import replace

from brain.domain import RoleSpec
from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import roles_a_plan_may_set


def known_roles(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Roles the job declares or runs, and the trainer roles of its strategy (all of them
    if it declares and runs none), without a count of 0 it did not ask for."""
    job = view.job
    known = roles_a_plan_may_set(job, view.nodes)
    kept, reasons = {}, []
    for role, spec in proposal.roles.items():
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
    return replace(proposal, roles=kept), reasons
