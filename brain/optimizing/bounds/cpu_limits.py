"""A CPU limit is never below the CPU request: Kubernetes rejects such a pod.

A role keeps the CPU limit it was registered or planned with unless a plan sets
another, so a plan that raises the request alone (workers given more cores) would leave
the limit under it. This is the chain's last step: whatever the steps before did to a
request, a planned role's limit ends at least at it.
"""

from __future__ import annotations

from dataclasses import replace

from brain.optimizing.bounds.view import BoundsView
from brain.optimizing.proposal import GUARD, Proposal, Reason
from brain.optimizing.roles import EPSILON, current_role


def cpu_limits(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    """Each planned role's CPU limit raised to its request where it is below it."""
    roles, reasons = dict(proposal.roles), []
    for role, planned in proposal.roles.items():
        spec = current_role(role, view.job, view.nodes).overlay(planned)
        if spec.cpu is None or spec.cpu_limit is None or spec.cpu_limit >= spec.cpu - EPSILON:
            continue
        roles[role] = replace(planned, cpu_limit=spec.cpu)
        reasons.append(
            Reason(
                GUARD,
                f"raised {role}.cpu_limit from {spec.cpu_limit:g} to its request "
                f"{spec.cpu:g} cores: a limit below the request is rejected",
                evidence={"role": role, "cpu": spec.cpu, "cpu_limit": spec.cpu_limit},
            )
        )
    return replace(proposal, roles=roles), reasons
