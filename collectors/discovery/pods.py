"""Each pod's facts as kube-state-metrics tells them, gathered from the answers of the
discovery queries (``collectors.discovery.queries``): owner, labels, requests and limits
(summed over the pod's containers), start, phase, completion and OOM kill. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from collectors.client import Series

PodKey = tuple[str, str]  # (namespace, pod)

# The answers a discovery reads, by name (the query names of ``queries.py``).
OWNERS = "owners"
LABELS = "labels"
REQUESTS = "requests"
LIMITS = "limits"
STARTED = "started"
PHASE = "phase"
COMPLETED = "completed"
OOM_KILLED = "oom_killed"
ANSWERS = (OWNERS, LABELS, REQUESTS, LIMITS, STARTED, PHASE, COMPLETED, OOM_KILLED)

# Labels of kube_pod_labels that are kube-state-metrics' or Prometheus', not the pod's.
_NOT_POD_LABELS = frozenset({"namespace", "pod", "uid", "job", "instance", "__name__"})


@dataclass
class PodFacts:
    """``requests``/``limits``: kube-state-metrics' resource name (``cpu`` cores,
    ``memory`` bytes, ``nvidia_com_gpu``) → the pod's total."""

    namespace: str
    pod: str
    owner_kind: str = ""
    owner_name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    requests: dict[str, float] = field(default_factory=dict)
    limits: dict[str, float] = field(default_factory=dict)
    started_at: datetime | None = None
    phase: str | None = None
    completed_at: datetime | None = None
    oom_killed: bool = False


def gather(answers: Mapping[str, Sequence[Series]]) -> dict[PodKey, PodFacts]:
    """The facts of every pod that has an owner in ``answers``; other series are ignored
    (a pod is known by its owner first)."""
    pods: dict[PodKey, PodFacts] = {}
    for series in answers.get(OWNERS, ()):
        key = _key(series)
        if key is None or not series.points:
            continue
        facts = pods.setdefault(key, PodFacts(*key))
        # A pod with several owners: the first with a kind wins, the rest are noise.
        if not facts.owner_kind:
            facts.owner_kind = series.labels.get("owner_kind", "")
            facts.owner_name = series.labels.get("owner_name", "")

    def each(name: str):
        for series in answers.get(name, ()):
            key = _key(series)
            if key in pods and series.points:
                yield pods[key], series, series.points[-1][1]

    for facts, series, _ in each(LABELS):
        for label, value in series.labels.items():
            if label.startswith("label_") and label not in _NOT_POD_LABELS and value:
                facts.labels[label] = value
    for name, target in ((REQUESTS, "requests"), (LIMITS, "limits")):
        for facts, series, value in each(name):
            resource = series.labels.get("resource", "")
            if resource and value >= 0:
                amounts = getattr(facts, target)
                amounts[resource] = amounts.get(resource, 0.0) + value
    for facts, _, value in each(STARTED):
        if value > 0:
            facts.started_at = _time(value)
    for facts, series, value in each(PHASE):
        if value > 0:
            facts.phase = series.labels.get("phase") or facts.phase
    for facts, _, value in each(COMPLETED):
        if value > 0:
            facts.completed_at = _time(value)
    for facts, _, value in each(OOM_KILLED):
        facts.oom_killed = facts.oom_killed or value > 0
    return pods


def _key(series: Series) -> PodKey | None:
    namespace, pod = series.labels.get("namespace"), series.labels.get("pod")
    return (namespace, pod) if namespace and pod else None


def _time(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(round(epoch_s), UTC)
