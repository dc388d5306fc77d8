"""Every PromQL expression the collector sends, as named, overridable templates.

Nothing else in Brain writes PromQL. A template is a ``string.Template``; the collector
fills in these placeholders:

``$selector``
    label matchers picking the pods of training jobs (``pod=~"<pattern>"`` in pod-name
    mapping, ``pod!=""`` in label mapping) plus ``BRAIN_PROMETHEUS_SELECTOR``; never empty,
    so it goes last inside braces: ``metric{container!="", $selector}``.
``$node_selector``
    ``BRAIN_PROMETHEUS_SELECTOR`` alone (or ``instance!=""`` when that is unset), for the
    cluster queries (node-exporter, kube-state-metrics).
``$rate_window``
    ``BRAIN_PROMETHEUS_RATE_WINDOW`` (default ``2m``).
``$query``, ``$labels``, ``$label_selector``
    only in ``pod_labels``, the join that adds the pod labels of kube-state-metrics to every
    pod query in label mapping.

``$`` followed by anything else (``$1`` in ``label_replace``) is left alone.

Each pod signal must return one series per pod carrying ``namespace`` and ``pod`` labels,
in the unit listed in ``UNITS``; the collector converts to Brain's units (MiB, fractions).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass

from brain.config import CollectorSettings
from brain.domain import NODE_MEASUREMENTS

# --- the signals --------------------------------------------------------------------

# A signal is named after what Brain stores, units in the name as in the API (``UNITS``
# says what its template returns instead). Stored as node samples, one column each: the
# names are the measurements of ``brain.domain.NodePoint``.
# Optional (BRAIN_PROMETHEUS_STEP_TIME): a node's mean mini-batch time, a sample column too.
STEP_TIME_SIGNAL = "step_time_s"
SAMPLE_SIGNALS = tuple(m for m in NODE_MEASUREMENTS if m != STEP_TIME_SIGNAL)
# A bare metric name in BRAIN_PROMETHEUS_STEP_TIME is read with this template.
STEP_TIME_FROM_METRIC = "avg by (namespace, pod) ({metric}{{$selector}})"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
# OOM kills, stored as events.
OOM_SIGNAL = "oom"
# The cluster's state, stored as its newest state: free capacity, one series per node
# (summed), and what pending pods request, one series for the cluster.
NODE_FREE_CPU = "node_free_cpu"
NODE_FREE_MEMORY_MIB = "node_free_memory_mib"
NODE_FREE_GPU = "node_free_gpu"
PENDING_PODS = "pending_pods"
PENDING_CPU = "pending_cpu"
PENDING_MEMORY_MIB = "pending_memory_mib"
PENDING_GPU = "pending_gpu"
# The label join of label mapping.
POD_LABELS = "pod_labels"

DEFAULT_TEMPLATES: dict[str, str] = {
    # cAdvisor: cores used by the pod's containers (the pause container and the pod-level
    # cgroup, container="", are left out so nothing is counted twice).
    "cpu": (
        "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total"
        '{container!="", container!="POD", $selector}[$rate_window]))'
    ),
    # cAdvisor: working set, what the OOM killer looks at.
    "memory_mib": (
        "sum by (namespace, pod) (container_memory_working_set_bytes"
        '{container!="", container!="POD", $selector})'
    ),
    # DCGM exporter (with Kubernetes pod attribution): mean utilization of the pod's GPUs.
    "gpu_util": "avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{$selector})",
    "gpu_memory_mib": "sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{$selector})",
    "gpu_memory_total_mib": (
        "sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{$selector} + DCGM_FI_DEV_FB_FREE{$selector})"
    ),
    # kube-state-metrics: per container, the restart count while the last termination was
    # an OOM kill (0 otherwise), plus 1 while the container is terminated by an OOM kill
    # (restartPolicy Never, as DLRover's pods run). Every rise of this value is one kill.
    "oom": (
        "max by (namespace, pod, container) ("
        "kube_pod_container_status_restarts_total{$selector}"
        " * on (namespace, pod, container) group_left () "
        "max by (namespace, pod, container) (kube_pod_container_status_last_terminated_reason"
        '{reason="OOMKilled", $selector})'
        " or on (namespace, pod, container) "
        "0 * kube_pod_container_status_restarts_total{$selector})"
        " + on (namespace, pod, container) ("
        "max by (namespace, pod, container) (kube_pod_container_status_terminated_reason"
        '{reason="OOMKilled", $selector})'
        " or on (namespace, pod, container) "
        "0 * max by (namespace, pod, container) (kube_pod_container_status_restarts_total"
        "{$selector}))"
    ),
    # node-exporter: idle cores and available memory per node.
    "node_free_cpu": (
        "sum by (instance) (rate(node_cpu_seconds_total"
        '{mode="idle", $node_selector}[$rate_window]))'
    ),
    "node_free_memory_mib": "sum by (instance) (node_memory_MemAvailable_bytes{$node_selector})",
    # kube-state-metrics: GPUs a node offers minus those requested by its pods that have
    # not finished (a pending pod bound to the node holds its GPUs too); a GPU node
    # without such pods has all of them free (the "or").
    "node_free_gpu": (
        "clamp_min(sum by (node) (kube_node_status_allocatable"
        '{resource="nvidia_com_gpu", $node_selector})'
        " - on (node) (sum by (node) (kube_pod_container_resource_requests"
        '{resource="nvidia_com_gpu", $node_selector}'
        " * on (namespace, pod) group_left () max by (namespace, pod) (kube_pod_status_phase"
        '{phase=~"Pending|Running", $node_selector}))'
        " or on (node) 0 * sum by (node) (kube_node_status_allocatable"
        '{resource="nvidia_com_gpu", $node_selector})), 0)'
    ),
    # kube-state-metrics: pending pods, and what they request (requests x 0/1 pending, so
    # the answer is 0, not empty, when nothing is pending).
    "pending_pods": 'sum(kube_pod_status_phase{phase="Pending", $node_selector})',
    "pending_cpu": (
        'sum(kube_pod_container_resource_requests{resource="cpu", $node_selector}'
        " * on (namespace, pod) group_left () max by (namespace, pod) (kube_pod_status_phase"
        '{phase="Pending", $node_selector}))'
    ),
    "pending_memory_mib": (
        'sum(kube_pod_container_resource_requests{resource="memory", $node_selector}'
        " * on (namespace, pod) group_left () max by (namespace, pod) (kube_pod_status_phase"
        '{phase="Pending", $node_selector}))'
    ),
    "pending_gpu": (
        'sum(kube_pod_container_resource_requests{resource="nvidia_com_gpu", $node_selector}'
        " * on (namespace, pod) group_left () max by (namespace, pod) (kube_pod_status_phase"
        '{phase="Pending", $node_selector}))'
    ),
    # Label mapping: copy the job, role and index labels of the pod onto each series.
    POD_LABELS: (
        "($query) * on (namespace, pod) group_left ($labels) "
        "group by (namespace, pod, $labels) (kube_pod_labels{$label_selector})"
    ),
}

# History (a backfill's coarser step, ``$rate_window`` = the step): each point keeps the
# step's peak memory and mean GPU use; CPU's rate() over the step is already its mean.
HISTORY_TEMPLATES: dict[str, str] = {
    "memory_mib": (
        "sum by (namespace, pod) (max_over_time(container_memory_working_set_bytes"
        '{container!="", container!="POD", $selector}[$rate_window]))'
    ),
    "gpu_util": (
        "avg by (namespace, pod) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{$selector}[$rate_window]))"
    ),
    "gpu_memory_mib": (
        "sum by (namespace, pod) (max_over_time(DCGM_FI_DEV_FB_USED{$selector}[$rate_window]))"
    ),
}
# Discovery: only pods a training operator or a batch Job owns, at every point.
TRAINING_PODS = (
    "($query) * on (namespace, pod) group_left () max by (namespace, pod) "
    '(kube_pod_owner{owner_kind=~"$owners", $selector})'
)

# What each template returns, and therefore how it is converted.
UNITS: dict[str, str] = {
    "cpu": "cores",
    "memory_mib": "bytes",
    "gpu_util": "percent",
    "gpu_memory_mib": "MiB",
    "gpu_memory_total_mib": "MiB",
    "oom": "count",
    "node_free_cpu": "cores",
    "node_free_memory_mib": "bytes",
    "node_free_gpu": "count",
    "pending_pods": "count",
    "pending_cpu": "cores",
    "pending_memory_mib": "bytes",
    "pending_gpu": "count",
    STEP_TIME_SIGNAL: "seconds",
}

# Brain's unit = template unit / divisor (a division, so 40 % is exactly 0.4).
_DIVISOR = {
    "cores": 1.0,
    "bytes": 1024.0 * 1024.0,
    "percent": 100.0,
    "MiB": 1.0,
    "count": 1.0,
    "seconds": 1.0,
}

# Signal names before units were part of them: named in the error, so an old override
# is renamed rather than silently ignored.
RENAMED = {
    "memory": "memory_mib",
    "gpu_memory": "gpu_memory_mib",
    "gpu_memory_total": "gpu_memory_total_mib",
    "node_cpu_free": "node_free_cpu",
    "node_memory_free": "node_free_memory_mib",
}

_PLACEHOLDERS = {
    "selector",
    "node_selector",
    "rate_window",
    "query",
    "labels",
    "label_selector",
}


def to_brain_unit(signal: str, value: float) -> float:
    """A value of ``signal`` in Brain's unit: cores, MiB, fraction 0..1, count."""
    return value / _DIVISOR[UNITS[signal]]


class QueryConfigError(ValueError):
    """The collector's query configuration cannot work."""


def promql_string(value: str) -> str:
    """``value`` as a double-quoted PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def pod_name_matcher(pattern: str) -> str:
    """A label matcher for pods whose name matches ``pattern`` (RE2 syntax is shared with
    Python for what pod-name patterns need, named groups included)."""
    return f"pod=~{promql_string(pattern)}"


@dataclass(frozen=True)
class QuerySet:
    """The rendered queries of one configuration."""

    templates: Mapping[str, str]
    selector: str
    node_selector: str
    rate_window: str
    # Label mapping: the labels joined from kube_pod_labels; empty in pod-name mapping.
    join_labels: tuple[str, ...] = ()
    join_selector: str = ""
    # Discovery: narrowed to pods these owner kinds own (kube_pod_owner); empty: not.
    training_owners: tuple[str, ...] = ()

    @property
    def sample_signals(self) -> tuple[str, ...]:
        """The node-sample columns read: the usage signals, and the step time when
        configured."""
        return SAMPLE_SIGNALS + ((STEP_TIME_SIGNAL,) if STEP_TIME_SIGNAL in self.templates else ())

    def pod_query(self, signal: str) -> str:
        """The PromQL of a per-pod signal (a sample column or ``oom``)."""
        query = self._render(signal)
        if self.join_labels:
            query = self._render(
                POD_LABELS,
                query=query,
                labels=", ".join(self.join_labels),
                label_selector=self.join_selector,
            )
        if self.training_owners:
            query = string.Template(TRAINING_PODS).safe_substitute(
                query=query, owners="|".join(self.training_owners), selector=self.selector
            )
        return query

    def cluster_query(self, signal: str) -> str:
        return self._render(signal)

    def _render(self, name: str, **extra: str) -> str:
        values = {
            "selector": self.selector,
            "node_selector": self.node_selector,
            "rate_window": self.rate_window,
            **extra,
        }
        return string.Template(self.templates[name]).safe_substitute(values)


def queries_from_settings(
    settings: CollectorSettings,
    *,
    training_owners: tuple[str, ...] = (),
    history_step_s: int | None = None,
) -> QuerySet:
    """The configured queries; ``training_owners``: narrowed to pods these kinds own
    (discovery); ``history_step_s``: the history variants at this step (backfill)."""
    overrides = settings.prometheus_queries
    rate_window = settings.prometheus_rate_window
    if history_step_s is not None:
        overrides = {**HISTORY_TEMPLATES, **overrides}
        rate_window = f"{int(history_step_s)}s"
    return build_queries(
        mapping=settings.collect_mapping,
        pod_name_pattern=settings.pod_name_pattern,
        job_label=settings.job_label,
        role_label=settings.role_label,
        index_label=settings.index_label,
        overrides=overrides,
        extra_selector=settings.prometheus_selector,
        rate_window=rate_window,
        step_time=settings.prometheus_step_time,
        training_owners=training_owners,
    )


def build_queries(
    *,
    mapping: str,
    pod_name_pattern: str,
    job_label: str,
    role_label: str,
    index_label: str,
    overrides: Mapping[str, str] | None = None,
    extra_selector: str = "",
    rate_window: str = "2m",
    step_time: str = "",
    training_owners: tuple[str, ...] = (),
) -> QuerySet:
    """Validate the configuration and render the query set."""
    overrides = dict(overrides or {})
    if STEP_TIME_SIGNAL in overrides:
        raise QueryConfigError(
            f"set the {STEP_TIME_SIGNAL} query with BRAIN_PROMETHEUS_STEP_TIME, not in "
            "BRAIN_PROMETHEUS_QUERIES"
        )
    unknown = sorted(set(overrides) - set(DEFAULT_TEMPLATES))
    if unknown:
        renamed = [f"{old} is now {RENAMED[old]}" for old in unknown if old in RENAMED]
        raise QueryConfigError(
            f"unknown query name(s) {', '.join(unknown)} in BRAIN_PROMETHEUS_QUERIES; "
            f"known: {', '.join(DEFAULT_TEMPLATES)}"
            + (f" ({'; '.join(renamed)})" if renamed else "")
        )
    templates = {**DEFAULT_TEMPLATES, **overrides}
    step_time = step_time.strip()
    if step_time:
        templates[STEP_TIME_SIGNAL] = (
            STEP_TIME_FROM_METRIC.format(metric=step_time)
            if _METRIC_NAME.match(step_time)
            else step_time
        )
    for name, template in templates.items():
        if not isinstance(template, str) or not template.strip():
            raise QueryConfigError(f"query {name!r} is empty")
        used = set(string.Template(template).get_identifiers())
        if used - _PLACEHOLDERS:
            raise QueryConfigError(
                f"query {name!r} uses unknown placeholder(s) "
                f"{', '.join('$' + p for p in sorted(used - _PLACEHOLDERS))}"
            )
    extra = extra_selector.strip().strip(",").strip()
    if mapping == "pod_name" and training_owners:
        # Discovery ties pods to jobs; the pod-name pattern only maps what it does not.
        matchers = ['pod!=""']
        join_labels: tuple[str, ...] = ()
        join_selector = ""
    elif mapping == "pod_name":
        matchers = [pod_name_matcher(pod_name_pattern)]
        join_labels: tuple[str, ...] = ()
        join_selector = ""
    elif mapping == "labels":
        matchers = ['pod!=""']
        join_labels = tuple(dict.fromkeys(label for label in (job_label, role_label, index_label)))
        join_selector = ", ".join([f'{job_label}!=""', *([extra] if extra else [])])
    else:
        raise QueryConfigError(f"unknown mapping {mapping!r}; use pod_name or labels")
    if extra:
        matchers.append(extra)
    return QuerySet(
        templates=templates,
        selector=", ".join(matchers),
        node_selector=extra or 'instance!=""',
        rate_window=rate_window,
        join_labels=join_labels,
        join_selector=join_selector,
        training_owners=tuple(training_owners),
    )
