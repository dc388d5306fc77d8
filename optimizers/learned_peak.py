"""Sizing with the learned recommender: each role's memory, CPU and GPU share at a
stated risk, from a calibrated forecast of the next run's peak.

The model (``brain.learned_sizing``) is trained by ``brain train`` or by ``brain serve``
on a schedule and handed in through ``context.sizing_model``; this optimizer never
loads it. Per role and resource it builds the role's history (``role_history``: the
largest node of each earlier run) and sizes at the resource's risk: memory with at
most ``memory_risk`` probability that the next run's peak exceeds it (OOM), CPU at
``cpu_risk`` of its 95th percentile exceeding it (throttling), the GPU share at
``gpu_risk`` of its GPU-memory peak exceeding it. Memory and GPUs are capped at the
request as given. A role without an earlier run is sized from its request and what
first runs of the fleet used of theirs.

Without a model it proposes what ``learned_margin`` (its default settings) proposes,
and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from brain.domain import RoleSpec, Stage
from brain.learned_sizing.risk_sizing import RiskSizing, size_for
from brain.optimizing import ANY_ROLE, Changes, ContextInput, OptimizerContext, Proposal
from brain.optimizing.sizing_model import role_history
from optimizers._common import mean, no_change, reason
from optimizers.gpu_sizing import (
    GpuBounds,
    LearnedSizeSettings,
    compute_in_use,
    memory_in_cards,
    per_node_cap,
)
from optimizers.learned_margin import LearnedMarginOptimizer, LearnedMarginSettings

NAME = "learned_peak"


def _risk(default: float, what: str) -> Any:
    return Field(
        default,
        gt=0.0,
        lt=1.0,
        description=f"Probability, at most, that the next run's {what} exceeds the size.",
    )


class LearnedPeakSettings(LearnedSizeSettings):
    memory_risk: float = _risk(0.005, "peak memory (an OOM kill)")
    cpu_risk: float = _risk(0.01, "95th-percentile CPU (throttling)")
    gpu_risk: float = _risk(0.04, "peak GPU memory")
    cap_memory_at_request: bool = Field(
        True, description="Never propose more memory than the job requests."
    )


@dataclass(frozen=True)
class Ask:
    """One role's resource to size: what it requests, how to round and cap it."""

    role: str
    request: float | None
    risk: float
    step: float
    capped: bool


class LearnedPeakOptimizer:
    """Sizes each role's memory, CPU and GPU share at a stated risk from a calibrated
    forecast of the next run's peak (gradient-boosted quantile trees over the role's
    history, cross-conformal calibration by workload); falls back to learned_margin without a
    trained model."""

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.create})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    # No default position: out of time it does not beat learned_margin (docs/optimizers.md).
    Settings: ClassVar[type[LearnedPeakSettings]] = LearnedPeakSettings

    def propose(self, context: OptimizerContext, settings: LearnedPeakSettings) -> Proposal:
        model = context.sizing_model
        if model is None:
            fallback = LearnedMarginOptimizer().propose(context, LearnedMarginSettings())
            note = reason(NAME, "no trained model: sized by learned_margin instead", {}, {})
            fallback.reasons.insert(0, note)
            return fallback
        if not context.job.roles:
            return no_change(NAME, "the job declares no roles")
        sized: dict[tuple[str, str], RiskSizing] = {}
        runs: dict[tuple[str, str], int] = {}
        for resource, asks in _asks(context, settings).items():
            histories = [role_history(context.history, a.role, resource, a.request) for a in asks]
            for ask, history, forecast in zip(
                asks, histories, model.forecasts(resource, histories), strict=True
            ):
                found = forecast and size_for(
                    forecast,
                    ask.risk,
                    request=ask.request,
                    cap_at_request=ask.capped,
                    step=ask.step,
                )
                if found:
                    sized[(ask.role, resource)] = found
                    runs[(ask.role, resource)] = len(history.peaks)
        proposal = Proposal()
        for role, spec in context.job.roles.items():
            mine = {res: s for (r, res), s in sized.items() if r == role}
            if not mine:
                proposal.reasons.append(
                    reason(NAME, f"{role}: no history and no request to size from", {}, {})
                )
                continue
            card = _card_mib(context, role)
            gpu_memory = mine.get("gpu_memory")
            gpu = bounds = None
            if gpu_memory and card:
                bounds = _gpu_bounds(context, role, settings)
                gpu = bounds.size(gpu_memory.size / card, settings.gpu_step)
            proposal.roles[role] = RoleSpec(
                count=spec.count,
                memory_mib=mine["memory"].size if "memory" in mine else None,
                cpu=mine["cpu"].size if "cpu" in mine else None,
                gpu=gpu,
            )
            notes = [
                f"{res} {s.size:g} at risk {s.risk:.2%} over {runs[(role, res)]} runs"
                + (" (capped at the request)" if s.capped else "")
                for res, s in mine.items()
            ]
            if bounds is not None and gpu is not None:
                notes.append(bounds.describe(gpu))
            proposal.reasons.append(
                reason(
                    NAME,
                    f"{role}: " + "; ".join(notes),
                    {"role": role, "model": model.version}
                    | {
                        res: {"size": s.size, "risk": s.risk, "runs": runs[(role, res)]}
                        for res, s in mine.items()
                    },
                    {
                        "memory_risk": settings.memory_risk,
                        "cpu_risk": settings.cpu_risk,
                        "gpu_risk": settings.gpu_risk,
                    },
                )
            )
        return proposal


def _asks(context: OptimizerContext, settings: LearnedPeakSettings) -> dict[str, list[Ask]]:
    """Per resource, what each role asks to be sized (one batched forecast each)."""
    asks: dict[str, list[Ask]] = {"memory": [], "cpu": [], "gpu_memory": []}
    for role, spec in context.job.roles.items():
        asks["memory"].append(
            Ask(
                role,
                spec.memory_mib or None,
                settings.memory_risk,
                1.0,
                settings.cap_memory_at_request,
            )
        )
        asks["cpu"].append(Ask(role, spec.cpu or None, settings.cpu_risk, settings.cpu_step, False))
        card = _card_mib(context, role)
        if card and spec.gpu:
            asks["gpu_memory"].append(
                Ask(role, spec.gpu * card, settings.gpu_risk, settings.gpu_step * card, True)
            )
    return {resource: found for resource, found in asks.items() if found}


def _card_mib(context: OptimizerContext, role: str) -> float | None:
    """The memory of one GPU of the role, as its most recent runs reported it."""
    for past in context.history:
        for node in past.role_nodes(role):
            if node.gpu_card_mib:
                return node.gpu_card_mib
    return None


# The newest runs whose GPU use bounds the GPUs from below (learned_margin's window).
_GPU_FLOOR_RUNS = 2


def _gpu_bounds(context: OptimizerContext, role: str, settings: LearnedPeakSettings) -> GpuBounds:
    """The compute the newest runs kept busy and the cards their peaks filled (the
    forecast may go below neither), and the request and GPU limit per node above."""
    runs = [nodes for past in context.history if (nodes := past.role_nodes(role))]
    busy, filled = [], []
    for nodes in runs[:_GPU_FLOOR_RUNS]:
        in_use = [b for n in nodes if (b := compute_in_use(n)) is not None]
        busy += [max(in_use)] if in_use else []
        filled += [c for n in nodes if (c := memory_in_cards(n)) is not None]
    return GpuBounds(
        compute=mean(busy) if busy else None,
        memory_cards=max(filled, default=None),
        target=settings.gpu_target_utilization,
        cap=per_node_cap(context.job.roles.get(role), context.job.limits),
    )
