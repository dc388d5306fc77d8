"""GPU and CPU suggestion for a new job from its last long runs on the same GPU type.

The computation is split so that other code (the suggestions API, the backtest) can
run it on per-run numbers: ``run_usage`` aggregates one run's nodes of a role,
``suggest_role`` turns several runs into a suggestion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from brain.domain import RoleSpec, Stage, gpu_cards
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    HistoricalJob,
    NodeUsage,
    OptimizerContext,
    Proposal,
)
from optimizers._common import CpuStepSettings, ceil_to, cited_uid, mean, no_change, reason
from optimizers.gpu_sizing import GpuBounds, gpu_step_field, per_node_cap

NAME = "gpu_cpu"


class GpuCpuSettings(CpuStepSettings):
    runs: int = Field(3, ge=1, le=50, description="Most recent qualifying runs a suggestion needs.")
    min_duration_s: float = Field(
        1800, ge=0, le=30 * 86400, description="Runs at most this long (seconds) are ignored."
    )
    gpu_target_utilization: float = Field(
        0.9, ge=0.1, le=1.0, description="GPU (and GPU memory) utilization the suggestion aims for."
    )
    cpu_target_utilization: float = Field(
        0.5, ge=0.1, le=1.0, description="CPU utilization the CPU request and limit aim for."
    )
    gpu_step: float = gpu_step_field()


@dataclass(frozen=True)
class RunUsage:
    """One run's usage of one role: GPU/CPU means are over its nodes, maxima the largest node.

    ``allocated_gpus`` is what that run's nodes of the role had (GPUs per node, the largest
    request); utilizations are fractions of it, so it is what they multiply.
    """

    cpu_mean: float
    cpu_max: float
    gpu_util_mean: float | None = None
    gpu_memory_util_max: float | None = None
    allocated_gpus: float | None = None


@dataclass(frozen=True)
class GpuCpuSuggestion:
    """``gpu`` is ``None`` when the role has no GPUs or no GPU metrics (no opinion)."""

    gpu: float | None
    cpu_request: float
    cpu_limit: float
    evidence: dict[str, Any] = field(default_factory=dict)


def run_usage(nodes: Sequence[NodeUsage]) -> RunUsage:
    """Aggregate one run's nodes of a role (``nodes`` must not be empty)."""
    gpu_utils = [n.gpu_util_mean for n in nodes if n.gpu_util_mean is not None]
    gpu_memory_utils = [n.gpu_memory_util_max for n in nodes if n.gpu_memory_util_max is not None]
    return RunUsage(
        cpu_mean=mean([n.cpu_mean for n in nodes]),
        cpu_max=max(n.cpu_max for n in nodes),
        gpu_util_mean=mean(gpu_utils) if gpu_utils else None,
        gpu_memory_util_max=max(gpu_memory_utils) if gpu_memory_utils else None,
        allocated_gpus=max(n.requested.gpu for n in nodes) or None,
    )


def suggest_role(
    runs: Sequence[RunUsage], settings: GpuCpuSettings | None = None, cap: float | None = None
) -> GpuCpuSuggestion:
    """Suggestion for one role from its usage in ``runs`` (at least one).

    ``gpu = allocated x max(mean GPU util, max GPU memory util) / gpu target``, rounded
    up to ``gpu_step``, where ``allocated`` is what the past runs had (a utilization is a
    fraction of the run's own GPUs, not of what a new run asks for); ``cpu_limit = max
    CPU / cpu target`` and ``cpu_request = mean CPU / cpu target``, rounded up to
    ``cpu_step``. Means are means of the run means, maxima the largest run maximum.
    Runs with different allocations are compared in GPUs in use (allocated x
    utilization), which is the same rule when they all had the same count. GPU memory
    utilization is a fraction of all the pod's cards, so memory in use is counted in
    cards; the GPUs are never fewer than that memory in whole cards and never more than
    ``cap`` (the request and the GPU limit per node, when known).
    """
    settings = settings or GpuCpuSettings()
    cpu_max = max(r.cpu_max for r in runs)
    cpu_mean = mean([r.cpu_mean for r in runs])
    gpu_runs = [r for r in runs if r.allocated_gpus]
    compute = [r.allocated_gpus * r.gpu_util_mean for r in gpu_runs if r.gpu_util_mean is not None]
    memory = [
        gpu_cards(r.allocated_gpus) * r.gpu_memory_util_max
        for r in gpu_runs
        if r.gpu_memory_util_max is not None
    ]
    in_use = (mean(compute) if compute else None, max(memory, default=None))
    known = [used for used in in_use if used is not None]
    gpu = None
    bounds = GpuBounds(in_use[0], in_use[1], settings.gpu_target_utilization, cap)
    if known:
        gpu = bounds.size(max(known) / settings.gpu_target_utilization, settings.gpu_step)
    allocations = sorted({r.allocated_gpus for r in gpu_runs})
    target = settings.cpu_target_utilization
    return GpuCpuSuggestion(
        gpu=gpu,
        cpu_request=ceil_to(cpu_mean / target, settings.cpu_step),
        cpu_limit=ceil_to(cpu_max / target, settings.cpu_step),
        evidence={
            "runs": len(runs),
            # GPUs per node the past runs had: one number when they agree.
            "allocated_gpus": allocations[0] if len(allocations) == 1 else allocations or None,
            "gpu_util_mean": _mean_of([r.gpu_util_mean for r in gpu_runs]),
            "gpu_memory_util_max": max(
                (r.gpu_memory_util_max for r in gpu_runs if r.gpu_memory_util_max is not None),
                default=None,
            ),
            "gpus_in_use_mean": in_use[0],
            "gpu_memory_in_use_max": in_use[1],
            "cpu_max": cpu_max,
            "cpu_mean": cpu_mean,
        }
        | ({} if gpu is None else {"gpu_cap": cap}),
    )


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return mean(known) if known else None


def qualifying_runs(
    history: Sequence[HistoricalJob], role: str, gpu_type: str | None, settings: GpuCpuSettings
) -> list[HistoricalJob]:
    """The most recent runs longer than ``min_duration_s`` on ``gpu_type`` that ran ``role``
    (a run's length: from ``started_at``, else its first sample, to its end)."""
    return [
        h
        for h in history
        if h.job.gpu_type == gpu_type
        and (h.duration_s or 0) > settings.min_duration_s
        and h.role_nodes(role)
    ][: settings.runs]


def _on_gpu_type(gpu_type: str | None) -> str:
    """Which runs count, in words: a job without a GPU type learns from runs without one."""
    return "without a GPU type" if gpu_type is None else f"on GPU type {gpu_type}"


class GpuCpuSuggestionOptimizer:
    """Suggests each role's GPUs, CPU request and CPU limit from its last long runs.

    Uses the last ``runs`` finished related runs longer than ``min_duration_s`` on the
    job's GPU type: GPUs so that the busier of GPU compute and GPU memory sits at
    ``gpu_target_utilization``, CPU request and limit so that mean and peak CPU sit at
    ``cpu_target_utilization``. A role with fewer qualifying runs gets no suggestion.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.create})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.create: 20}
    Settings: ClassVar[type[GpuCpuSettings]] = GpuCpuSettings

    def propose(self, context: OptimizerContext, settings: GpuCpuSettings) -> Proposal:
        job = context.job
        if not job.roles:
            return no_change(NAME, "the job declares no roles")
        threshold = {
            "runs": settings.runs,
            "min_duration_s": settings.min_duration_s,
            "gpu_target_utilization": settings.gpu_target_utilization,
            "cpu_target_utilization": settings.cpu_target_utilization,
        }
        proposal = Proposal()
        for role in job.roles:
            runs = qualifying_runs(context.history, role, job.gpu_type, settings)
            if len(runs) < settings.runs:
                proposal.reasons.append(
                    reason(
                        NAME,
                        f"history too thin for {role}: {len(runs)} runs over "
                        f"{settings.min_duration_s:.0f} s {_on_gpu_type(job.gpu_type)}, need "
                        f"{settings.runs}",
                        {"role": role, "qualifying_runs": len(runs)},
                        threshold,
                    )
                )
                continue
            suggestion = suggest_role(
                [run_usage(h.role_nodes(role)) for h in runs],
                settings,
                cap=per_node_cap(job.roles[role], job.limits),
            )
            # No opinion on the count: another optimizer (startup) may have sized it.
            proposal.roles[role] = RoleSpec(
                cpu=suggestion.cpu_request,
                cpu_limit=suggestion.cpu_limit,
                gpu=suggestion.gpu,
            )
            proposal.reasons.append(
                reason(
                    NAME,
                    _message(role, suggestion, settings),
                    suggestion.evidence
                    | {
                        "role": role,
                        "run_ids": [cited_uid(context, h.job.uid, h.job.namespace) for h in runs],
                    },
                    threshold,
                )
            )
        return proposal


def _message(role: str, s: GpuCpuSuggestion, settings: GpuCpuSettings) -> str:
    e = s.evidence

    cpu = (
        f"CPU max {e['cpu_max']:.2f} / {settings.cpu_target_utilization} -> limit {s.cpu_limit}, "
        f"mean {e['cpu_mean']:.2f} / {settings.cpu_target_utilization} -> request {s.cpu_request}"
    )
    if s.gpu is None:
        return f"{role} over {e['runs']} runs: {cpu}; no GPU suggestion"
    target = settings.gpu_target_utilization
    allocated = e["allocated_gpus"]
    if isinstance(allocated, list):  # the runs had different GPU counts
        used = max(u for u in (e["gpus_in_use_mean"], e["gpu_memory_in_use_max"]) if u is not None)
        return (
            f"{role} over {e['runs']} runs with {allocated} GPUs per node: GPUs in use "
            f"(allocated x util) mean {_text(e['gpus_in_use_mean'])}, GPU memory in use max "
            f"{_text(e['gpu_memory_in_use_max'])} -> {used:.3f} / {target} = "
            f"{_gpus(s, used / target)}; {cpu}"
        )
    utils = (e["gpu_util_mean"], e["gpu_memory_util_max"])
    busiest = max(u for u in utils if u is not None)
    return (
        f"{role} over {e['runs']} runs with {allocated} GPUs per node: GPU util mean "
        f"{_text(utils[0])}, GPU memory util max {_text(utils[1])} -> {allocated} x "
        f"{busiest:.3f} / {target} = {_gpus(s, allocated * busiest / target)}; {cpu}"
    )


def _gpus(s: GpuCpuSuggestion, wanted: float) -> str:
    """The GPUs, saying so where the request or the GPU limit cut them."""
    cap = s.evidence.get("gpu_cap")
    if cap is None or s.gpu is None or s.gpu < cap or wanted <= cap:
        return f"{s.gpu} GPUs"
    return f"{wanted:.2f}, capped at {cap:g} GPUs (the request and the GPU limit per node)"


def _text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
