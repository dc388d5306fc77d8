"""The estimate of an all-reduce job: its workers sized from their first minutes, and as
many of them as the job's limits hold.

An all-reduce job has no PS to balance: every worker trains alike and each added worker
adds speed (less and less). The workers are sized as the PS estimate sizes its trainers,
from their mean CPU (with the margin when they are CPU-bound: they use less than they
need) and given the count that fills the job's CPU, GPU and memory limits. Memory is left
as requested. The step from the current count is the guard's to bound.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from brain.domain import ROLE_WORKER, Resources, RoleSpec
from brain.optimizing import NodeView, OptimizerContext, Proposal
from brain.optimizing.roles import current_role, effective_roles, role_totals
from optimizers._common import ceil_to, mean, mean_cpu, no_change, over_limits, reason, too_early

if TYPE_CHECKING:
    from optimizers.estimate import EstimateSettings

NAME = "estimate"


def propose(context: OptimizerContext, settings: EstimateSettings) -> Proposal:
    workers = sorted((n for n in context.nodes_of(ROLE_WORKER) if n.cpu > 0), key=_index)
    not_ready = _not_ready(context, workers, settings)
    if not_ready is not None:
        return not_ready
    now = current_role(ROLE_WORKER, context.job, context.nodes)
    used = mean([mean_cpu(context.samples_of(n.name)) for n in workers])
    request = max(n.cpu for n in workers)
    bound = used >= settings.cpu_bound_at * request
    margin = settings.factor if bound else 1.0
    cpu = ceil_to(used * margin, settings.cpu_step)
    cpu_limit = None if bound else ceil_to(used * settings.factor, settings.cpu_step)
    most = _most_workers(context, now, cpu, settings.max_workers)
    bounds = context.job.bounds_of(ROLE_WORKER)
    if bounds.max_count is not None:
        most = min(most, bounds.max_count)
    least = max(bounds.min_count or 1, 1)
    count = most
    # Other roles (a chief, an evaluator) count against the limits too.
    while count > least and _over(context, RoleSpec(count=count, cpu=cpu)):
        count -= 1
    evidence = {
        "workers_measured": [n.name for n in workers],
        "worker_cpu_used": round(used, 3),
        "worker_cpu_request": request,
        "cpu_bound": bound,
        "workers": count,
    }
    threshold = {
        "factor": settings.factor,
        "cpu_bound_at": settings.cpu_bound_at,
        "max_workers": settings.max_workers,
    }
    limits = {
        k: v
        for k, v in (("cpu", context.job.limits.cpu), ("gpu", context.job.limits.gpu))
        if v is not None
    }
    if _over(context, RoleSpec(count=count, cpu=cpu)):
        return no_change(
            NAME,
            f"even {count} worker(s) of {cpu:g} cores exceed the job's limits",
            evidence,
            threshold | limits,
        )
    held_by = ", ".join(f"{k} limit {v:g}" for k, v in limits.items()) or (
        f"no limit: at most {settings.max_workers}"
    )
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(count=count, cpu=cpu, cpu_limit=cpu_limit)},
        reasons=[
            reason(
                NAME,
                f"all-reduce workers use {used:.2f} of {request:g} cores: "
                f"{count} workers of {cpu:g} cores (mean CPU x{margin:g}"
                f"{', CPU-bound' if bound else ', not CPU-bound; limit with the margin'}), "
                f"{now.gpu or 0:g} GPU(s) and {now.memory_mib or 0:.0f} MiB each as requested; "
                f"as many as the job holds ({held_by})",
                evidence,
                threshold | limits,
            )
        ],
    )


def _index(node: NodeView) -> int:
    return node.index


def _most_workers(context: OptimizerContext, now: RoleSpec, cpu: float, ceiling: int) -> int:
    """Workers of ``cpu`` cores (and the role's GPUs and memory) the job's limits hold
    beside its other roles, at most ``ceiling``; ``ceiling`` without any limit."""
    others = role_totals(
        {
            role: spec
            for role, spec in effective_roles({}, context.job, context.nodes).items()
            if role != ROLE_WORKER
        }
    )
    each = Resources(cpu=cpu, memory_mib=now.memory_mib or 0.0, gpu=now.gpu or 0.0)
    limits = context.job.limits
    most = ceiling
    for limit, used, per in (
        (limits.cpu, others.cpu, each.cpu),
        (limits.gpu, others.gpu, each.gpu),
        (limits.memory_mib, others.memory_mib, each.memory_mib),
    ):
        if limit is not None and per > 0:
            most = min(most, math.floor((limit - used) / per + 1e-9))
    return max(most, 1)


def _over(context: OptimizerContext, worker: RoleSpec) -> bool:
    return bool(over_limits(context, {ROLE_WORKER: worker}))


def _not_ready(
    context: OptimizerContext, workers: list[NodeView], settings: EstimateSettings
) -> Proposal | None:
    """A no-change answer naming what is missing, or None when the estimate can be made."""
    threshold = {"ready_after_s": settings.ready_after_s, "min_samples": settings.min_samples}
    short = [n.name for n in workers if len(context.samples_of(n.name)) < settings.min_samples]
    starts = [s.ts for n in workers for s in context.samples_of(n.name)[:1]]
    starts += [s.ts for s in context.speed[:1]]
    observed = (context.now - min(starts)).total_seconds() if starts else 0.0
    evidence = {
        "ready": False,
        "workers": len(workers),
        "workers_without_enough_samples": short,
        "observed_s": round(observed, 1),
    }
    if not workers:
        return no_change(NAME, "not ready: the job runs no worker yet", evidence, threshold)
    if short:
        return no_change(
            NAME,
            f"not ready: waiting for {settings.min_samples} usage samples of every worker",
            evidence,
            threshold,
        )
    return too_early(NAME, observed, settings.ready_after_s, evidence, threshold)
