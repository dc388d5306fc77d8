"""How many GPUs a node of a role gets: the one rule every GPU sizer ends with.

A node's ``gpu`` is the cards its pod holds and its ``gpu_memory_total_mib`` the memory
of all those cards together (DCGM summed over the pod), so one card holds
``gpu_memory_total_mib / cards``. Whatever an optimizer estimates, the node gets at
least the GPU compute it kept busy at the target utilization and at least the cards
its peak GPU memory filled (memory cannot be split across a fraction of a card it
does not have), at most what the job requests per node and its GPU limit allows per
node, rounded up to ``gpu_step`` (1: whole GPUs, which is all ``nvidia.com/gpu``
accepts; below 1 only where the site shares cards).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from brain.domain import Limits, RoleSpec
from brain.optimizing import NodeUsage
from optimizers._common import CpuStepSettings, ceil_to


def gpu_step_field(default: float = 1.0) -> Any:
    return Field(
        default,
        ge=0.001,
        le=1.0,
        description="GPU granularity: 1 rounds up to whole GPUs (all a pod can request as "
        "nvidia.com/gpu); below 1 only where the site shares cards.",
    )


class LearnedSizeSettings(CpuStepSettings):
    """Settings shared by the optimizers that size every resource from history."""

    # Finer than the usual 0.1 core: many workloads use a small fraction of a core.
    cpu_step: float = Field(
        0.01, ge=0.01, le=4.0, description="CPU granularity in cores; sizes are rounded up to it."
    )
    gpu_step: float = gpu_step_field()
    gpu_target_utilization: float = Field(
        0.9,
        ge=0.1,
        le=1.0,
        description="GPU utilization below which the GPU compute the runs kept busy must sit: "
        "the GPUs are never fewer than that compute over it.",
    )


def compute_in_use(node: NodeUsage) -> float | None:
    """GPUs ``node`` kept busy on average: its GPUs x their mean utilization."""
    if node.gpu_util_mean is None or not node.requested.gpu:
        return None
    return node.requested.gpu * node.gpu_util_mean


def memory_in_cards(node: NodeUsage) -> float | None:
    """``node``'s peak GPU memory in cards of its own card size."""
    size = node.gpu_card_mib
    if size is None or node.gpu_memory_max_mib is None:
        return None
    return node.gpu_memory_max_mib / size


def per_node_cap(spec: RoleSpec | None, limits: Limits) -> float | None:
    """The most GPUs one node of the role may get: its request, and the job's GPU limit
    shared over the role's count (None: neither is known)."""
    caps = []
    if spec is not None and spec.gpu:
        caps.append(spec.gpu)
    if limits.gpu is not None and spec is not None and spec.count:
        caps.append(limits.gpu / spec.count)
    return min(caps) if caps else None


@dataclass(frozen=True)
class GpuBounds:
    """What one node of a role needs and may have, in GPUs."""

    compute: float | None  # GPUs busy in the past runs (mean)
    memory_cards: float | None  # cards the peak GPU memory filled (largest)
    target: float  # utilization the compute floor aims for
    cap: float | None  # request, and the GPU limit per node

    @property
    def floor(self) -> float:
        """The compute in use at the target utilization, and the cards the memory filled
        (whole cards once rounded to a step of 1)."""
        compute = 0.0 if self.compute is None else self.compute / self.target
        memory = 0.0 if self.memory_cards is None else self.memory_cards
        return max(compute, memory)

    def size(self, wanted: float, step: float) -> float:
        """``wanted`` raised to the floor, rounded up to ``step``, then capped."""
        gpu = ceil_to(max(wanted, self.floor), step)
        if self.cap is not None and gpu > self.cap:
            # Whole steps under the cap (a limit of 4 GPUs over 3 nodes is 1 each), unless
            # the cap is below one step (a request for a shared half card).
            steps = math.floor(self.cap / step + 1e-9)
            gpu = round(steps * step, 6) if steps else self.cap
        return gpu

    def evidence(self) -> dict[str, Any]:
        return {
            "gpus_in_use": None if self.compute is None else round(self.compute, 4),
            "gpu_memory_cards": None if self.memory_cards is None else round(self.memory_cards, 4),
            "gpu_floor": round(self.floor, 4),
            "gpu_cap": self.cap,
        }

    def describe(self, gpu: float) -> str:
        parts = []
        if self.compute is not None:
            parts.append(
                f"{self.compute:.2f} GPUs busy / {self.target} = {self.compute / self.target:.2f}"
            )
        if self.memory_cards is not None:
            parts.append(f"peak GPU memory fills {self.memory_cards:.2f} cards")
        floor = "; ".join(parts) or "no GPU use measured"
        cap = "" if self.cap is None else f", at most {self.cap:g} (request, GPU limit)"
        return f"{gpu:g} GPUs per node ({floor}{cap})"
