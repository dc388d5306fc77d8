"""The reference job-master client: how a custom job master talks to Brain.

See ``BrainClient``; the docs' "Job masters and the reference client" shows a full loop.

This package imports only httpx, pydantic and itself (relative imports), so the same
directory is also the ``brain-client`` distribution (``client/pyproject.toml``, imported
as ``brain_client``), which a job master installs without the server's dependencies.
"""

from .client import BrainClient, BrainError
from .models import (
    ClusterStatePush,
    Event,
    EventKind,
    Ingested,
    JobLimits,
    JobRegistration,
    JobStatus,
    JobUpdate,
    NodeRegistration,
    NodeUsage,
    Plan,
    PlanNode,
    PlanReason,
    PlanRole,
    PlanStatus,
    RoleRequest,
    SpeedPoint,
    Stage,
    Strategy,
)

__all__ = [
    "BrainClient",
    "BrainError",
    "ClusterStatePush",
    "Event",
    "EventKind",
    "Ingested",
    "JobLimits",
    "JobRegistration",
    "JobStatus",
    "JobUpdate",
    "NodeRegistration",
    "NodeUsage",
    "Plan",
    "PlanNode",
    "PlanReason",
    "PlanRole",
    "PlanStatus",
    "RoleRequest",
    "SpeedPoint",
    "Stage",
    "Strategy",
]
