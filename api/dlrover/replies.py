"""A stored Brain plan, written as the DLRover master reads it.

The master reads ``job_optimize_plans[0].resource`` only: ``task_group_resources[role]``
(count, cpu, memory) and ``pod_resources[pod]`` (a migration). Its units decide the
encoding: memory is **bytes** (the master divides by 2^20; the proto comment's "MB" is
wrong), CPU whole cores (it rounds a group's up and truncates a pod's), no GPU.

Rules that keep the master's bookkeeping intact:
- never a group with ``count`` 0 (the master would record 0 nodes of that role);
- at create, 0 cpu or memory means "keep what the ElasticJob asks" (the master keeps the
  user's value for a 0), which is how Brain answers without history or a registration;
- in running stages a group whose size Brain does not know is left out, since the
  master would take a 0 PS size literally;
- launches and removals become counts (the master names and picks nodes itself);
  migrations become ``pod_resources`` with both cpu and memory filled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from api.dlrover.stages import OomPod, Reply
from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, RoleSpec
from brain.optimizing.proposal import NodeChange, PlanBody

MIB = 2**20


@dataclass(frozen=True)
class Group:
    """One ``TaskGroupResource``: ``cpu`` whole cores, ``memory_bytes``; 0 = keep."""

    count: int
    cpu: int
    memory_bytes: int


@dataclass(frozen=True)
class PodSize:
    """One ``pod_resources`` entry (a migration): both fields always filled."""

    cpu: int
    memory_bytes: int


@dataclass(frozen=True)
class DLRoverPlan:
    groups: dict[str, Group]
    pods: dict[str, PodSize]

    @property
    def is_empty(self) -> bool:
        return not self.groups and not self.pods


def memory_bytes(memory_mib: float | None) -> int:
    return math.ceil(memory_mib) * MIB if memory_mib and memory_mib > 0 else 0


def whole_cores(cpu: float | None) -> int:
    # Rounded up: the master truncates a pod's CPU, which would otherwise lose a core.
    return math.ceil(cpu - 1e-9) if cpu and cpu > 0 else 0


def to_dlrover(
    plan: PlanBody, reply: Reply, current: Mapping[str, RoleSpec], oom_pod: OomPod | None
) -> DLRoverPlan:
    """What the master is told for ``plan``; ``current`` is the job's roles as they run."""
    match reply:
        case Reply.create:
            return DLRoverPlan(_create_groups(plan, current), {})
        case Reply.worker_oom:
            return _worker_oom(plan, current, oom_pod)
        case Reply.pod_oom:
            return DLRoverPlan({}, _pods([m for m in plan.migrate if _is(m, oom_pod)]))
        case Reply.workers:
            return DLRoverPlan(_groups(plan, current, (ROLE_WORKER,)), {})
        case Reply.ps:
            return DLRoverPlan(_groups(plan, current, (ROLE_PS,)), _pods(plan.migrate))
        case _:
            return DLRoverPlan(_groups(plan, current, (ROLE_WORKER, ROLE_PS)), _pods(plan.migrate))


def _create_groups(plan: PlanBody, current: Mapping[str, RoleSpec]) -> dict[str, Group]:
    """Worker and ps, always both. The master turns one of the create-stage workers into
    the chief (with the worker size) when the job has no chief replica, so the worker
    group is sized for the larger of chief and worker and counts the chief too."""
    proposed = {role: plan.roles.get(role) for role in (ROLE_WORKER, ROLE_CHIEF, ROLE_PS)}

    def known(role: str) -> RoleSpec:
        # Brain's values where it has them, the job's current ones elsewhere.
        return current.get(role, RoleSpec()).overlay(proposed[role])

    worker, chief, ps = known(ROLE_WORKER), known(ROLE_CHIEF), known(ROLE_PS)
    trainers = [spec for spec in (worker, chief) if spec.cpu or spec.memory_mib]
    chief_count = 1 if (proposed[ROLE_CHIEF] is not None or chief.count) else 0
    return {
        ROLE_WORKER: Group(
            count=max((worker.count or 0) + chief_count, 1),
            cpu=max((whole_cores(s.cpu) for s in trainers), default=0),
            memory_bytes=max((memory_bytes(s.memory_mib) for s in trainers), default=0),
        ),
        ROLE_PS: Group(
            count=max(ps.count or 0, 1),
            cpu=whole_cores(ps.cpu),
            memory_bytes=memory_bytes(ps.memory_mib),
        ),
    }


def _worker_oom(
    plan: PlanBody, current: Mapping[str, RoleSpec], oom_pod: OomPod | None
) -> DLRoverPlan:
    """At create the master reads only the worker group's memory, and a plan without a
    worker group aborts its handling of the OOM: so a worker group, or nothing. The fix
    is the pod's migration, or the worker role's memory (one fix for every worker)."""
    resized = [m for m in plan.migrate if _is(m, oom_pod) and m.memory_mib]
    role = plan.roles.get(ROLE_WORKER)
    if resized:
        cpu, memory = resized[0].cpu, resized[0].memory_mib
    elif role is not None and role.memory_mib:
        cpu, memory = role.cpu, role.memory_mib
    else:
        return DLRoverPlan({}, {})
    count = current.get(ROLE_WORKER, RoleSpec()).count or 1
    group = Group(count, whole_cores(cpu), memory_bytes(memory))
    return DLRoverPlan({ROLE_WORKER: group}, {})


def _groups(
    plan: PlanBody, current: Mapping[str, RoleSpec], roles: tuple[str, ...]
) -> dict[str, Group]:
    groups = {}
    for role in roles:
        now = current.get(role, RoleSpec())
        spec = plan.roles.get(role)
        delta = sum(1 for c in plan.launch if c.role == role) - sum(
            1 for c in plan.remove if c.role == role
        )
        if spec is None and delta == 0:
            continue
        spec = now.overlay(spec)
        count = (spec.count or 0) + (delta if plan.roles.get(role) is None else 0)
        group = Group(count, whole_cores(spec.cpu), memory_bytes(spec.memory_mib))
        if group.count > 0 and group.cpu > 0 and group.memory_bytes > 0:
            groups[role] = group
    return groups


def _pods(migrations: list[NodeChange]) -> dict[str, PodSize]:
    pods = {}
    for change in migrations:
        size = PodSize(whole_cores(change.cpu), memory_bytes(change.memory_mib))
        if change.name and size.cpu > 0 and size.memory_bytes > 0:
            pods[change.name] = size
    return pods


def _is(change: NodeChange, pod: OomPod | None) -> bool:
    return pod is not None and change.name == pod.name
