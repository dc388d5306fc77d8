"""How many GPUs Brain would have given a finished run's main role, from what its DCGM
series measured: the seed rule of the ``gpu_cpu`` optimizer, per card.

``gpus = allocated × max(mean GPU utilization, peak GPU memory / memory of the pod's
cards) / target``, rounded up to whole cards, never fewer than the cards the memory peak
filled, never more than the run had (a replay saves; it does not add cards), at least
one. ``target`` is ``gpu_cpu``'s ``gpu_target_utilization`` (0.9 unless configured).
A run without GPU series keeps what it had.
"""

from __future__ import annotations

import math

from brain.config import Settings
from brain.optimizing import OptimizerRegistry
from brain.optimizing.pipeline import resolve_settings

DEFAULT_TARGET = 0.9
GPU_OPTIMIZER = "gpu_cpu"


def replayed_gpus(
    allocated: float,
    util_mean: float | None,
    memory_max_mib: float | None,
    memory_total_mib: float | None,
    target: float = DEFAULT_TARGET,
) -> float:
    """GPUs per node for a run that had ``allocated`` per node (see the module)."""
    if allocated <= 0:
        return 0.0
    memory = None
    if memory_max_mib is not None and memory_total_mib:
        memory = min(memory_max_mib / memory_total_mib, 1.0)
    known = [v for v in (util_mean, memory) if v is not None]
    if not known:
        return float(allocated)
    wanted = allocated * max(known) / target
    memory_cards = math.ceil(allocated * memory - 1e-9) if memory is not None else 0
    cards = max(math.ceil(wanted - 1e-9), memory_cards, 1)
    return float(min(cards, allocated))


def gpu_target(registry: OptimizerRegistry, settings: Settings) -> float:
    """``gpu_cpu``'s target utilization as configured; the default when it is absent."""
    optimizer = registry.get(GPU_OPTIMIZER)
    if optimizer is None:
        return DEFAULT_TARGET
    resolved = resolve_settings([optimizer], settings.optimizer_settings, {})[GPU_OPTIMIZER]
    return float(getattr(resolved, "gpu_target_utilization", DEFAULT_TARGET))
