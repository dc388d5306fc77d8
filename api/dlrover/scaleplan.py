"""Render a stored plan as DLRover's ``ScalePlan`` Kubernetes object.

Schema: elastic.iml.github.io/v1alpha1 ScalePlan (the CRD the ElasticJob operator
consumes). Quantities follow Kubernetes: CPU as cores ("4") or millicores ("1500m"),
memory in Mi, GPUs as whole ``nvidia.com/gpu`` (fractions are rounded up).

``psHosts`` are the PS addresses once the plan is applied, as DLRover's master writes
them (the plan's ``ps_hosts``, named by ``api.dlrover.ps_hosts``). The CRD has no field
for a CPU limit: a replica's ``resource`` is one quantity list, which the operator gives
the pods as their request; role CPU limits therefore travel in the
``CPU_LIMITS_ANNOTATION`` annotation (JSON, role -> quantity) for whoever sets pod limits
(an admission hook, a human).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from brain.db.engine import ReadSession
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import K8S_LABEL, K8S_NAME_MAX, is_k8s_namespace
from brain.errors import Conflict
from brain.optimizing.proposal import NodeChange, PlanBody
from brain.services import nodes

API_VERSION = "elastic.iml.github.io/v1alpha1"
KIND = "ScalePlan"
GPU_RESOURCE = "nvidia.com/gpu"
CPU_LIMITS_ANNOTATION = "brain/cpu-limits"


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


# RFC 1123 object names (subdomains) as Kubernetes checks them: dot-separated labels.
_LABEL = K8S_LABEL.removeprefix("^").removesuffix("$")
_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")


def k8s_name_problem(plan_id: int, owner_job: str, namespace: str | None) -> str | None:
    """Why the ScalePlan of this job could not be created in Kubernetes, or None."""
    name = f"{owner_job}-scaleplan-{plan_id}"
    if len(name) > K8S_NAME_MAX or not _SUBDOMAIN.match(name):
        return (
            f"the job name {owner_job!r} does not make a Kubernetes object name "
            f"(lowercase letters, digits, '-' and '.'; at most {K8S_NAME_MAX} with the plan "
            "suffix)"
        )
    if namespace is not None and not is_k8s_namespace(namespace):
        return f"the namespace {namespace!r} is not a Kubernetes namespace"
    return None


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
    cpu_limits = {
        role: cpu_quantity(spec.cpu_limit) for role, spec in body.roles.items() if spec.cpu_limit
    }
    if cpu_limits:
        metadata["annotations"] = {CPU_LIMITS_ANNOTATION: json.dumps(cpu_limits, sort_keys=True)}
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


def scaleplan(session: ReadSession, job: JobRow, plan: ScalePlanRow) -> dict[str, Any]:
    """The ScalePlan object of a stored plan; Conflict (``field: format``) when the job's
    name or namespace is one Kubernetes would refuse."""
    problem = k8s_name_problem(plan.id, job.name, job.namespace)
    if problem is not None:
        raise Conflict(f"{problem}: no ScalePlan can be rendered", field="format")
    return scaleplans(session, job, [plan])[plan.id]


def scaleplans(
    session: ReadSession, job: JobRow, plans: list[ScalePlanRow]
) -> dict[int, dict[str, Any]]:
    """The ScalePlan objects of a job's stored plans, by plan id (the job's pods' ranks
    read once for all)."""
    ranks = nodes.ranks_by_name(session, job)
    return {p.id: to_k8s(p.id, p.body, job.name, job.namespace, ranks) for p in plans}
