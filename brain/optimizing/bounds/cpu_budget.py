"""A job registered without a CPU limit is held to the site's budget.

Such a job was planned as if CPU were free (64 workers for a job using 3.5 cores). The
site's budget (``BRAIN_DEFAULT_JOB_CPU``) stands in for the missing limit: the view's
``job`` carries it as the limit every later step fits (the optimizers size within it
too), and this step says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from brain.optimizing.context import JobView
from brain.optimizing.proposal import GUARD, Proposal, Reason

if TYPE_CHECKING:
    from brain.optimizing.bounds.view import BoundsView


def budgeted_job(job: JobView, budget_cpu: float | None) -> JobView:
    """``job`` with ``budget_cpu`` as its CPU limit when it has none."""
    if budget_cpu is None or job.limits.cpu is not None:
        return job
    return replace(job, limits=replace(job.limits, cpu=budget_cpu))


def cpu_budget(proposal: Proposal, view: BoundsView) -> tuple[Proposal, list[Reason]]:
    budget_cpu = view.default_job_cpu
    if budget_cpu is None or view.registered_job.limits.cpu is not None:
        return proposal, []
    return proposal, [
        Reason(
            GUARD,
            f"the job has no CPU limit: the site's budget of {budget_cpu:g} cores per job "
            "stands in for it",
            threshold={"default_job_cpu": budget_cpu},
        )
    ]
