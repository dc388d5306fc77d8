"""The PromQL of discovery: eight instant queries per window, each answering one series
per training pod (or per pod and resource or phase), never one per container or sample.

Each is evaluated at the window's end over the whole window (``[$window]``), so a pod
that lived only inside the window is found, and its last state is read. Pods are first
narrowed to those a training operator or a batch Job owns (``$owners``), so the answers
grow with the training pods, not with the cluster; ``$selector`` is
``BRAIN_PROMETHEUS_SELECTOR`` (a cluster label on Thanos or Mimir), or ``pod!=""``.
"""

from __future__ import annotations

import string

from collectors.discovery import pods
from collectors.discovery.kinds import TRAINING_OWNERS

_TRAINING = (
    "max by (namespace, pod) (last_over_time(kube_pod_owner"
    '{owner_kind=~"$owners", $selector}[$window]))'
)


def _per_pod(expression: str) -> str:
    return f"({expression}) * on (namespace, pod) group_left () {_TRAINING}"


TEMPLATES: dict[str, str] = {
    pods.OWNERS: (
        "max by (namespace, pod, owner_kind, owner_name) (last_over_time(kube_pod_owner"
        '{owner_kind=~"$owners", $selector}[$window]))'
    ),
    pods.LABELS: _per_pod("last_over_time(kube_pod_labels{$selector}[$window])"),
    pods.REQUESTS: "sum by (namespace, pod, resource) ("
    + _per_pod(
        "last_over_time(kube_pod_container_resource_requests"
        '{resource=~"cpu|memory|nvidia_com_gpu", $selector}[$window])'
    )
    + ")",
    pods.LIMITS: "sum by (namespace, pod, resource) ("
    + _per_pod(
        "last_over_time(kube_pod_container_resource_limits"
        '{resource=~"cpu|memory|nvidia_com_gpu", $selector}[$window])'
    )
    + ")",
    pods.STARTED: "min by (namespace, pod) ("
    + _per_pod("last_over_time(kube_pod_start_time{$selector}[$window])")
    + ")",
    pods.PHASE: "max by (namespace, pod, phase) ("
    + _per_pod("last_over_time(kube_pod_status_phase{$selector}[$window])")
    + ") > 0",
    pods.COMPLETED: "max by (namespace, pod) ("
    + _per_pod("last_over_time(kube_pod_completion_time{$selector}[$window])")
    + ")",
    pods.OOM_KILLED: "max by (namespace, pod) ("
    + _per_pod(
        "last_over_time(kube_pod_container_status_terminated_reason"
        '{reason="OOMKilled", $selector}[$window])'
    )
    + ") > 0",
}


def training_pods_join(selector: str) -> str:
    """A suffix narrowing a per-pod query to training pods: ``(<query>) <this>``. At each
    point of a range query only pods a training operator or batch Job owns then remain."""
    return (
        "* on (namespace, pod) group_left () max by (namespace, pod) (kube_pod_owner"
        f'{{owner_kind=~"{"|".join(TRAINING_OWNERS)}", {selector}}})'
    )


def render(name: str, *, selector: str, window_s: int) -> str:
    return string.Template(TEMPLATES[name]).substitute(
        owners="|".join(TRAINING_OWNERS), selector=selector, window=f"{max(int(window_s), 1)}s"
    )
