"""The reference job-master client: how a custom job master talks to Brain.

See ``BrainClient``; the README's "Integrating a job master" shows a full loop.
"""

from brain.client.client import BrainClient, BrainError
from brain.client.models import (
    ClusterStatePush,
    Ingested,
    JobLimits,
    JobRegistration,
    NodeUsage,
    Plan,
    PlanNode,
    PlanReason,
    PlanRole,
    RoleRequest,
    SpeedPoint,
)

__all__ = [
    "BrainClient",
    "BrainError",
    "ClusterStatePush",
    "Ingested",
    "JobLimits",
    "JobRegistration",
    "NodeUsage",
    "Plan",
    "PlanNode",
    "PlanReason",
    "PlanRole",
    "RoleRequest",
    "SpeedPoint",
]
