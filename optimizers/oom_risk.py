"""Migration of a node whose memory is about to run out, before it is OOM-killed."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import Stage
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    NodeSample,
    NodeView,
    OptimizerContext,
    Proposal,
)
from optimizers._common import (
    ceil_mib,
    cooling_down,
    fit_line,
    migrates,
    no_change,
    reason,
    resized,
    seconds_since,
)

NAME = "oom_risk"


class OomRiskSettings(BaseModel):
    risk_threshold: float = Field(
        0.9,
        ge=0.5,
        le=1.0,
        description="Memory used / requested at or above which a node is at risk.",
    )
    horizon_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="A node is at risk if its memory trend crosses its request within this "
        "many seconds.",
    )
    margin: float = Field(
        1.2,
        ge=1.0,
        le=4.0,
        description="New memory = this x the larger of request, use now and predicted use.",
    )
    min_trend_samples: int = Field(
        3, ge=2, le=1000, description="Samples needed to fit a memory trend."
    )
    recent_trend_s: float = Field(
        300,
        ge=0,
        le=86400,
        description="The trend is also fitted over the samples of this many seconds up to "
        "the last (at least min_trend_samples), and the steeper of the two counts: growth "
        "that sped up (more workers, the end of a stall) is underestimated by the window's "
        "mean rate. 0: the window's fit alone.",
    )
    cooldown_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="No migration of a node within this many seconds of its last applied one.",
    )


class OomRiskOptimizer:
    """Moves a node to more memory when it is close to its memory request.

    A node is at risk when its latest memory use reaches ``risk_threshold`` of its
    request, or when a linear fit over its recent samples crosses the request within
    ``horizon_s`` seconds of its last sample (not of the wall clock: samples may lag);
    the fit over the last ``recent_trend_s`` counts instead when it is steeper.
    It is migrated to ``margin`` x the largest of its
    request, its latest use and the predicted use at the horizon, at most the largest node.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(nodes=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 30}
    Settings: ClassVar[type[OomRiskSettings]] = OomRiskSettings

    def propose(self, context: OptimizerContext, settings: OomRiskSettings) -> Proposal:
        threshold = {
            "risk_threshold": settings.risk_threshold,
            "horizon_s": settings.horizon_s,
            "margin": settings.margin,
            "node_max_memory_mib": context.node_max.memory_mib,
        }
        proposal = Proposal()
        for node in context.nodes:
            samples = context.samples_of(node.name)
            if not samples or node.memory_mib <= 0:
                continue
            cooling = cooling_down(
                NAME,
                context,
                lambda p, n=node.name: migrates(p, n),
                settings.cooldown_s,
                node.name,
            )
            if cooling is not None:
                proposal.reasons.extend(cooling.reasons)
                continue
            _check_node(context, node, samples, settings, threshold, proposal)
        if not proposal.reasons:
            return no_change(
                NAME,
                f"no node at >= {settings.risk_threshold:.0%} of its memory or trending past it "
                f"within {settings.horizon_s:.0f} s",
                threshold=threshold,
            )
        return proposal


def _check_node(
    context: OptimizerContext,
    node: NodeView,
    samples: list[NodeSample],
    settings: OomRiskSettings,
    threshold: dict[str, float],
    proposal: Proposal,
) -> None:
    latest = samples[-1].memory_mib
    predicted = None
    lines = [_trend(samples, settings)]
    if settings.recent_trend_s > 0:
        last = samples[-1].ts
        recent = [s for s in samples if seconds_since(s.ts, last) <= settings.recent_trend_s]
        lines.append(_trend(recent, settings))
    rising = [line for line in lines if line is not None and line[0] > 0]
    if rising:
        slope, intercept = max(rising)
        predicted = intercept + slope * settings.horizon_s  # x = seconds after the last
    by_threshold = latest >= settings.risk_threshold * node.memory_mib
    by_trend = predicted is not None and predicted >= node.memory_mib
    if not (by_threshold or by_trend):
        return
    cap = context.node_max.memory_mib
    memory = min(ceil_mib(max(node.memory_mib, latest, predicted or 0.0) * settings.margin), cap)
    cause = (
        "its use reached the risk threshold" if by_threshold else "its trend crosses its request"
    )
    evidence = {
        "node": node.name,
        "memory_mib": node.memory_mib,
        "used_mib": latest,
        "predicted_mib": None if predicted is None else round(predicted, 1),
    }
    if memory <= node.memory_mib:
        proposal.reasons.append(
            reason(
                NAME,
                f"{node.name} is at OOM risk ({cause}) but already has the largest node's "
                f"{cap:.0f} MiB",
                evidence,
                threshold,
            )
        )
        return
    proposal.migrate.append(resized(node, memory_mib=memory))
    predicted_text = "no rising trend" if predicted is None else f"{predicted:.0f} MiB predicted"
    proposal.reasons.append(
        reason(
            NAME,
            f"{node.name} at OOM risk, {cause}: uses {latest:.0f} of {node.memory_mib:.0f} MiB, "
            f"{predicted_text} in {settings.horizon_s:.0f} s -> migrate to {memory:.0f} MiB",
            evidence | {"new_memory_mib": memory},
            threshold,
        )
    )


def _trend(samples: list[NodeSample], settings: OomRiskSettings) -> tuple[float, float] | None:
    """``(slope, intercept)`` of memory over seconds after the last sample, or None with
    fewer than ``min_trend_samples`` samples."""
    if len(samples) < settings.min_trend_samples:
        return None
    last = samples[-1].ts
    return fit_line([seconds_since(last, s.ts) for s in samples], [s.memory_mib for s in samples])
