"""Which recommenders a backtest compares, and the knob each curve of the chart sweeps.

- ``request``: the request as given;
- ``gpu_cpu``: the seed GPU/CPU rule, its CPU request and its GPU share (fractional
  GPUs enabled, ``gpu_step`` 0.01, so the share is not rounded up to a whole card);
- ``startup``: the seed startup sizing of the chief (largest CPU and memory of the
  recent related runs);
- ``max_last<k>_x<m>``, ``p90_last<k>_x<m>``: simple rules, the margin ``m`` is their knob;
- ``learned_margin``: Brain's own sizing, ``safety`` is its knob (GPU shares at
  ``gpu_step`` 0.01 like ``gpu_cpu``: the traces' pods share cards).

Optimizers come from the registry; one that is not registered is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brain.lab.backtest.baselines import LastRunsRule, RequestAsGiven
from brain.optimizing import Optimizer, OptimizerRegistry
from brain.replay import adapters
from brain.replay.adapters import OptimizerRecommender
from brain.replay.runs import Recommender

RULE_MARGINS = (1.0, 1.15, 1.3, 1.5, 2.0, 2.5)
# Dense below 1, where the envelope moves from a quantile to the largest peak.
SAFETIES = (0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0)


@dataclass(frozen=True)
class Sweep:
    """A recommender family with one knob: one recommender per knob value."""

    family: str
    knob: str
    values: tuple[float, ...]
    make: Callable[[float], Recommender] | None  # None: sizes computed in one batch


def _gpu_cpu(registry: OptimizerRegistry) -> Recommender | None:
    optimizer = registry.get("gpu_cpu")
    if optimizer is None:
        return None
    return OptimizerRecommender(
        "gpu_cpu",
        optimizer,
        {"cpu": adapters.cpu, "gpu_memory": adapters.gpu_memory_mib},
        settings=optimizer.Settings(gpu_step=0.01),
    )


def _startup(registry: OptimizerRegistry) -> Recommender | None:
    optimizer = registry.get("startup")
    if optimizer is None:
        return None
    return OptimizerRecommender(
        "startup", optimizer, {"memory": adapters.memory_mib, "cpu": adapters.cpu}, role="chief"
    )


def learned_margin(optimizer: Optimizer, safety: float = 1.0) -> Recommender:
    """Brain's own sizing at a ``safety``; named plainly at the default."""
    readers = {
        "memory": adapters.memory_mib,
        "cpu": adapters.cpu,
        "gpu_memory": adapters.gpu_memory_mib,
    }
    name = "learned_margin" if safety == 1.0 else f"learned_margin_s{safety:g}"
    return OptimizerRecommender(
        name, optimizer, readers, settings=optimizer.Settings(safety=safety, gpu_step=0.01)
    )


def standard(registry: OptimizerRegistry, *, k: int = 7, margin: float = 1.15) -> list[Recommender]:
    """The recommenders of a backtest, in report order."""
    found = [
        RequestAsGiven(),
        _gpu_cpu(registry),
        _startup(registry),
        LastRunsRule("max", k, margin),
        LastRunsRule("p90", k, margin),
    ]
    if (optimizer := registry.get("learned_margin")) is not None:
        found.append(learned_margin(optimizer))
    return [r for r in found if r is not None]


def sweeps(registry: OptimizerRegistry, *, k: int = 7) -> list[Sweep]:
    """The knob sweeps of the chart."""
    found = [
        Sweep(f"max_last{k}", "margin", RULE_MARGINS, lambda m: LastRunsRule("max", k, m)),
        Sweep(f"p90_last{k}", "margin", RULE_MARGINS, lambda m: LastRunsRule("p90", k, m)),
    ]
    if (optimizer := registry.get("learned_margin")) is not None:
        found.append(
            Sweep("learned_margin", "safety", SAFETIES, lambda s: learned_margin(optimizer, s))
        )
    return found
