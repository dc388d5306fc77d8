"""The optimizer framework: what an optimizer sees, what it returns, how it is found.

Optimizers live outside ``brain`` (the ``optimizers`` package or third-party
packages) and are discovered through the ``brain.optimizers`` entry-point group.
"""

from brain.optimizing.changes import ANY_ROLE, Changes, ContextInput, reads_of
from brain.optimizing.context import (
    EventView,
    HistoricalJob,
    JobView,
    MemoryPeak,
    NodeSample,
    NodeUsage,
    NodeView,
    OptimizerContext,
    PlanView,
    SpeedSample,
)
from brain.optimizing.proposal import NodeChange, Proposal, Reason
from brain.optimizing.registry import Optimizer, OptimizerRegistry, load_registry

__all__ = [
    "ANY_ROLE",
    "Changes",
    "ContextInput",
    "EventView",
    "HistoricalJob",
    "JobView",
    "MemoryPeak",
    "NodeChange",
    "NodeSample",
    "NodeUsage",
    "NodeView",
    "Optimizer",
    "OptimizerContext",
    "OptimizerRegistry",
    "PlanView",
    "Proposal",
    "Reason",
    "SpeedSample",
    "load_registry",
    "reads_of",
]
