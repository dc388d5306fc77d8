"""Render a stored plan as DLRover's ``ScalePlan`` Kubernetes object.

Schema: elastic.iml.github.io/v1alpha1 ScalePlan (the CRD the ElasticJob operator
consumes). Quantities follow Kubernetes: CPU as cores ("4") or millicores ("1500m"),
memory in Mi, GPUs as whole ``nvidia.com/gpu`` (fractions are rounded up).
"""

from __future__ import annotations

import math
from typing import Any

from brain.optimizing.proposal import NodeChange, PlanBody

API_VERSION = "elastic.iml.github.io/v1alpha1"
KIND = "ScalePlan"
GPU_RESOURCE = "nvidia.com/gpu"


def cpu_quantity(cores: float) -> str:
    millicores = math.ceil(round(cores * 1000, 6))
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_quantity(mib: float) -> str:
    return f"{math.ceil(round(mib, 6))}Mi"


def resource(cpu: float | None, memory_mib: float | None, gpu: float | None) -> dict[str, str]:
    quantities: dict[str, str] = {}
    if cpu:
        quantities["cpu"] = cpu_quantity(cpu)
    if memory_mib:
        quantities["memory"] = memory_quantity(memory_mib)
    if gpu:
        quantities[GPU_RESOURCE] = str(math.ceil(round(gpu, 6)))
    return quantities


def _pod(change: NodeChange, rank_by_name: dict[str, int]) -> dict[str, Any]:
    pod: dict[str, Any] = {"type": change.role}
    if change.name:
        pod["name"] = change.name
        if change.name in rank_by_name:
            pod["rankIndex"] = rank_by_name[change.name]
    quantities = resource(change.cpu, change.memory_mib, change.gpu)
    if quantities:
        pod["resource"] = quantities
    return pod


def to_k8s(
    plan_id: int,
    body: PlanBody,
    owner_job: str,
    namespace: str | None,
    rank_by_name: dict[str, int],
) -> dict[str, Any]:
    """The ScalePlan object for a plan body."""
    metadata: dict[str, Any] = {
        "name": f"{owner_job}-scaleplan-{plan_id}",
        "labels": {"elasticjob-name": owner_job, "scale-type": "auto"},
    }
    if namespace:
        metadata["namespace"] = namespace
    replica_specs = {
        role: {
            "replicas": int(spec.count) if spec.count is not None else 0,
            "resource": resource(spec.cpu, spec.memory_mib, spec.gpu),
        }
        for role, spec in body.roles.items()
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": {
            "ownerJob": owner_job,
            "replicaResourceSpecs": replica_specs,
            "createPods": [_pod(c, rank_by_name) for c in body.launch],
            "removePods": [_pod(c, rank_by_name) for c in body.remove],
            "migratePods": [_pod(c, rank_by_name) for c in body.migrate],
            "psHosts": list(body.ps_hosts),
        },
    }
