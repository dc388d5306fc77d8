"""Migration of a CPU-saturated parameter server to a larger node."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from brain.domain import ROLE_PS, Stage
from brain.optimizing import OptimizerContext, Proposal
from optimizers._common import CpuStepSettings, ceil_to, no_change, reason, resized

NAME = "hot_ps"


class HotPsSettings(CpuStepSettings):
    hot_threshold: float = Field(
        0.8,
        ge=0.1,
        le=1.0,
        description="CPU used / requested at or above which a PS sample is hot.",
    )
    hot_samples: int = Field(
        3, ge=1, le=100, description="A PS is hot when each of its last this-many samples is hot."
    )
    target_utilization: float = Field(
        0.6, ge=0.1, le=1.0, description="CPU utilization the migrated PS is sized for."
    )


class HotPsOptimizer:
    """Moves each hot PS to a node with more CPU; the other PS are left alone.

    A PS is hot when its CPU use reached ``hot_threshold`` of its request in each of
    its last ``hot_samples`` samples. It is migrated with ``peak recent use /
    target_utilization`` cores (rounded up to ``cpu_step``), at most the largest node.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    Settings: ClassVar[type[HotPsSettings]] = HotPsSettings

    def propose(self, context: OptimizerContext, settings: HotPsSettings) -> Proposal:
        ps_nodes = context.nodes_of(ROLE_PS)
        if not ps_nodes:
            return no_change(NAME, "the job has no PS")
        threshold = {
            "hot_threshold": settings.hot_threshold,
            "hot_samples": settings.hot_samples,
            "target_utilization": settings.target_utilization,
        }
        proposal = Proposal()
        utilization: dict[str, list[float]] = {}
        for ps in ps_nodes:
            if ps.cpu <= 0:  # no request to compare against
                continue
            recent = context.samples_of(ps.name)[-settings.hot_samples :]
            utilization[ps.name] = [round(s.cpu / ps.cpu, 3) for s in recent]
            hot = len(recent) == settings.hot_samples and all(
                s.cpu >= settings.hot_threshold * ps.cpu for s in recent
            )
            if not hot:
                continue
            used = max(s.cpu for s in recent)
            cap = context.node_max.cpu
            cpu = min(ceil_to(used / settings.target_utilization, settings.cpu_step), cap)
            evidence = {"node": ps.name, "cpu": ps.cpu, "cpu_used": [s.cpu for s in recent]}
            if cpu <= ps.cpu:
                proposal.reasons.append(
                    reason(
                        NAME,
                        f"{ps.name} is hot but already has {ps.cpu} cores, the largest node "
                        f"allows {cap}: cannot grow",
                        evidence,
                        threshold | {"node_max_cpu": cap},
                    )
                )
                continue
            proposal.migrate.append(resized(ps, cpu=cpu))
            proposal.reasons.append(
                reason(
                    NAME,
                    f"{ps.name} used >= {settings.hot_threshold:.0%} of its {ps.cpu} cores in "
                    f"its last {settings.hot_samples} samples (peak {used:.2f}): migrate to "
                    f"{cpu} cores (peak / {settings.target_utilization}, at most {cap})",
                    evidence | {"new_cpu": cpu},
                    threshold | {"node_max_cpu": cap},
                )
            )
        if not proposal.reasons:
            return no_change(
                NAME,
                f"no PS at >= {settings.hot_threshold:.0%} CPU in each of its last "
                f"{settings.hot_samples} samples",
                {"utilization": utilization},
                threshold,
            )
        return proposal
