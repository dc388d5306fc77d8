"""Domain vocabulary shared by the store, the optimizers and the API.

Units are part of the names: ``cpu`` in cores, ``memory_mib`` in MiB, ``gpu`` as a
(possibly fractional) count, utilizations as fractions 0..1, times as aware UTC.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import Field


class JobStatus(StrEnum):
    pending = "pending"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    stopped = "stopped"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.succeeded, JobStatus.failed, JobStatus.stopped)


class Strategy(StrEnum):
    ps = "ps"
    allreduce = "allreduce"


class EventKind(StrEnum):
    started = "started"
    succeeded = "succeeded"
    failed = "failed"
    oom = "oom"
    evicted = "evicted"
    relaunched = "relaunched"
    scaled = "scaled"


class Stage(StrEnum):
    """When an optimizer runs in a job's life."""

    create = "create"
    oom = "oom"
    estimate = "estimate"
    running = "running"


class PlanStatus(StrEnum):
    proposed = "proposed"
    applied = "applied"
    rejected = "rejected"
    failed = "failed"
    superseded = "superseded"
    # A plan that changes nothing: kept for its reasons, with nothing to apply or report.
    no_change = "no_change"


# The status message of a plan no job master got: computed after the gRPC deadline, the
# master was answered with no plan (it stays ``proposed``, but nothing applies it).
PLAN_NOT_SERVED = "computed after the gRPC deadline; the master got no plan"


# Well-known roles; any other role name is accepted as well.
ROLE_PS = "ps"
ROLE_CHIEF = "chief"
ROLE_WORKER = "worker"
ROLE_EVALUATOR = "evaluator"
# The training roles of a DLRover job (its master's own replica is not one).
TRAINING_ROLES = (ROLE_PS, ROLE_WORKER, ROLE_CHIEF, ROLE_EVALUATOR)


@dataclass(frozen=True)
class Resources:
    """A resource amount: cores, MiB and GPUs."""

    cpu: float = 0.0
    memory_mib: float = 0.0
    gpu: float = 0.0


@dataclass(frozen=True)
class RoleSpec:
    """What one role of a job runs with: ``count`` nodes of this size each.

    In a proposal, ``None`` means "no opinion, keep what the job has". ``cpu`` is the
    CPU request; ``cpu_limit`` an optional higher CPU limit.
    """

    # The descriptions document the plan and job JSON (pydantic reads them from here).
    count: Annotated[int | None, Field(description="Nodes of this role.")] = None
    cpu: Annotated[float | None, Field(description="CPU request per node, cores.")] = None
    memory_mib: Annotated[float | None, Field(description="Memory per node, MiB.")] = None
    gpu: Annotated[float | None, Field(description="GPUs per node.")] = None
    cpu_limit: Annotated[float | None, Field(description="CPU limit per node, cores (if set).")] = (
        None
    )

    def overlay(self, other: RoleSpec | None) -> RoleSpec:
        """``other``'s values where it has them (not None), this spec's elsewhere."""
        if other is None:
            return self
        given = {f.name: v for f in fields(RoleSpec) if (v := getattr(other, f.name)) is not None}
        return replace(self, **given)


@dataclass(frozen=True)
class RoleBounds:
    """How many nodes a role may run with (an elastic job, as Volcano's ``minAvailable``
    and a maximum): no plan goes outside them. ``None`` means unbounded on that side.
    Nodes above ``min_count`` are elastic: removed first, added last."""

    min_count: int | None = None
    max_count: int | None = None

    def clip(self, count: int) -> int:
        """``count`` moved into the bounds."""
        if self.max_count is not None:
            count = min(count, self.max_count)
        if self.min_count is not None:
            count = max(count, self.min_count)
        return count


@dataclass(frozen=True)
class Limits:
    """Upper bounds for a whole job (sum over all its nodes); ``None`` means unbounded."""

    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None


@dataclass(frozen=True)
class ClusterState:
    """Free capacity and pending demand of the cluster at ``ts``, as ``source`` (e.g.
    ``prometheus``) saw it. ``None``: the source does not report it (no GPU nodes, no
    kube-state-metrics). Free capacity is summed over ``nodes`` nodes; pending demand is
    what pending pods request; ``queued_jobs`` the jobs a scheduler holds back (pushed)."""

    source: str
    ts: datetime
    nodes: int
    free_cpu: float | None = None
    free_memory_mib: float | None = None
    free_gpu: float | None = None
    pending_pods: int | None = None
    pending_cpu: float | None = None
    pending_memory_mib: float | None = None
    pending_gpu: float | None = None
    queued_jobs: int | None = None


def gpu_cards(gpu: float) -> int:
    """The cards a pod holding ``gpu`` GPUs occupies (a shared fraction sits on one).

    GPU memory is reported per pod, summed over its cards (DCGM by pod): one card holds
    that total over ``gpu_cards``."""
    return max(math.ceil(gpu - 1e-9), 1)


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(ts: datetime) -> datetime:
    """Aware UTC datetime; naive values (e.g. read back from SQLite) are taken as UTC."""
    if ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


def default_group_key(user: str, name: str) -> str:
    """Recurring jobs are the same user's runs of the same name unless told otherwise."""
    return f"{user}/{name}"


# Kubernetes object names (DNS subdomains, RFC 1123) are at most 253 characters: job
# uids, node (pod) names, namespaces and clusters are stored and accepted up to that.
K8S_NAME_MAX = 253
# A Kubernetes namespace is an RFC 1123 label: lowercase letters, digits and '-', at most
# 63 characters. It is written into ScalePlans and PS addresses.
NAMESPACE_MAX = 63
K8S_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# The longest user name the jobs table stores.
USER_NAME_MAX = 128


def is_k8s_namespace(name: str) -> bool:
    """Whether ``name`` is a Kubernetes namespace (the rule the REST schema checks)."""
    return len(name) <= NAMESPACE_MAX and re.fullmatch(K8S_LABEL, name) is not None


@dataclass(frozen=True, slots=True)
class NodePoint:
    """One usage point of one node: which node and when, then what it measured.

    The one list of a node sample's fields: the stored columns, the ingest path and the
    API's point models are derived from it or checked against it
    (tests/test_node_point_fields.py)."""

    name: str
    role: str
    index: int
    ts: datetime
    cpu: float
    memory_mib: float
    gpu_util: float | None = None
    gpu_memory_mib: float | None = None
    gpu_memory_total_mib: float | None = None
    step_time_s: float | None = None


# Which node and when; every other field of a NodePoint is a measurement.
NODE_POINT_KEY = ("name", "role", "index", "ts")
NODE_MEASUREMENTS = tuple(f.name for f in fields(NodePoint) if f.name not in NODE_POINT_KEY)
