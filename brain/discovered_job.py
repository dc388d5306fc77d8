"""A training job as the cluster's metrics show it, before Brain stores it.

The Prometheus collector (``collectors/discovery``) builds these from kube-state-metrics;
``brain.services.discovered_jobs`` registers them. Plain values only: pure on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from brain.domain import JobStatus, RoleSpec


@dataclass(frozen=True, slots=True)
class DiscoveredPod:
    """One pod of a discovered job: the node Brain stores its load under."""

    pod: str
    role: str
    index: int


@dataclass(frozen=True)
class DiscoveredJob:
    """One run of a training job: the Kubernetes object ``namespace``/``name`` of
    ``kind``, its roles (count and per-pod requests), when it ran and how it ended.

    ``seen_at`` is the end of the window it was seen in: a job is described as of then.
    """

    namespace: str
    name: str
    kind: str
    user: str
    group_key: str
    roles: dict[str, RoleSpec]
    pods: tuple[DiscoveredPod, ...]
    status: JobStatus
    seen_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    exit_reason: str | None = None
    # Pods whose container the OOM killer ended (their final state), by pod name.
    oom_killed: tuple[str, ...] = field(default_factory=tuple)
