"""From pods to training jobs: the pure heart of discovery.

Pods are grouped by the job their labels and owner name (``kinds.classify``); each
job gets its roles, with per-pod requests and limits, its start, its status and end.

How a job's state is read from its pods:

- a replica is a role and an index; when a replica was relaunched (a new pod with the same
  index) its newest pod speaks for it, so a count is the number of replicas;
- parameter servers are stopped or deleted when the workers are done, so a job's state is
  that of its other replicas (of all, when it has only parameter servers);
- running while one of those replicas is pending or running (pending while none has
  started); else failed when one failed (exit reason ``OOMKilled`` when the OOM killer
  ended it), succeeded when all succeeded, stopped otherwise (pods gone without a final
  phase);
- a pod with a completion time has finished whatever its last phase;
- started at its first pod's start; finished at its last completion (the end of the
  window it was seen in, when no pod tells).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from brain.discovered_job import DiscoveredJob, DiscoveredPod
from brain.domain import ROLE_PS, JobStatus, RoleSpec
from collectors.discovery.kinds import LabelSelector, PodClass, classify
from collectors.discovery.naming import job_group_key, job_user
from collectors.discovery.pods import PodFacts

MIB = 1024.0 * 1024.0
OOM_REASON = "OOMKilled"


@dataclass(frozen=True)
class DiscoveryRules:
    """The configurable part of discovery (``BRAIN_DISCOVERY_*``), label names as
    kube-state-metrics exports them."""

    user_label: str = ""
    group_label: str = ""
    batch_selector: LabelSelector = LabelSelector()


def discover_jobs(
    pods: Iterable[PodFacts], rules: DiscoveryRules, seen_at: datetime
) -> list[DiscoveredJob]:
    """Every training job among ``pods`` as of ``seen_at``, ordered by namespace, name."""
    members: dict[tuple[str, str, str], list[tuple[PodFacts, PodClass]]] = defaultdict(list)
    for facts in pods:
        found = classify(
            facts.owner_kind, facts.owner_name, facts.pod, facts.labels, rules.batch_selector
        )
        if found is not None:
            members[(facts.namespace, found.kind, found.name)].append((facts, found))
    return [
        _job(namespace, kind, name, found, rules, seen_at)
        for (namespace, kind, name), found in sorted(members.items())
    ]


def _job(
    namespace: str,
    kind: str,
    name: str,
    members: list[tuple[PodFacts, PodClass]],
    rules: DiscoveryRules,
    seen_at: datetime,
) -> DiscoveredJob:
    placed = _indexed(members)
    replicas: dict[tuple[str, int], PodFacts] = {}
    for facts, role, index in placed:
        newest = replicas.get((role, index))
        if newest is None or _start_key(facts) >= _start_key(newest):
            replicas[(role, index)] = facts
    decisive = {key: f for key, f in replicas.items() if key[0] != ROLE_PS} or replicas
    status, exit_reason = _status(list(decisive.values()))
    starts = [f.started_at for f, _, _ in placed if f.started_at is not None]
    finished_at = None
    if status.finished:
        ends = [f.completed_at for f in decisive.values() if f.completed_at is not None]
        finished_at = max(ends) if ends else seen_at
        if starts and finished_at < min(starts):
            finished_at = max(starts)
    labels = _labels_of(placed)
    user = job_user(namespace, labels, rules.user_label)
    return DiscoveredJob(
        namespace=namespace,
        name=name,
        kind=kind,
        user=user,
        group_key=job_group_key(user, name, labels, rules.group_label),
        roles=_roles(placed),
        pods=tuple(
            DiscoveredPod(f.pod, role, index)
            for f, role, index in sorted(placed, key=lambda p: p[0].pod)
        ),
        status=status,
        seen_at=seen_at,
        started_at=min(starts) if starts else None,
        finished_at=finished_at,
        exit_reason=exit_reason,
        oom_killed=tuple(sorted(f.pod for f, _, _ in placed if f.oom_killed)),
    )


def _indexed(members: list[tuple[PodFacts, PodClass]]) -> list[tuple[PodFacts, str, int]]:
    """Each pod with its role and index; pods without an index (plain Jobs without
    completion indexes) take the next free ones of their role, in pod-name order."""
    taken: dict[str, set[int]] = defaultdict(set)
    for _, found in members:
        if found.index is not None:
            taken[found.role].add(found.index)
    placed = []
    for facts, found in sorted(members, key=lambda m: m[0].pod):
        index = found.index
        if index is None:
            index = 0
            while index in taken[found.role]:
                index += 1
            taken[found.role].add(index)
        placed.append((facts, found.role, index))
    return placed


def _start_key(facts: PodFacts) -> tuple[float, str]:
    started = facts.started_at.timestamp() if facts.started_at is not None else float("-inf")
    return (started, facts.pod)


def _status(pods: list[PodFacts]) -> tuple[JobStatus, str | None]:
    phases = [_phase(f) for f in pods]
    if "Running" in phases:
        return JobStatus.running, None
    if "Pending" in phases:
        started = any(f.started_at is not None for f in pods)
        return (JobStatus.running if started else JobStatus.pending), None
    failed = [f for f, phase in zip(pods, phases, strict=True) if phase == "Failed"]
    if failed:
        oom = any(f.oom_killed for f in failed)
        return JobStatus.failed, OOM_REASON if oom else "a pod failed"
    if phases and all(phase == "Succeeded" for phase in phases):
        return JobStatus.succeeded, None
    return JobStatus.stopped, "pods gone without a final phase"


def _phase(facts: PodFacts) -> str | None:
    if facts.completed_at is not None and facts.phase not in ("Failed", "Succeeded"):
        return "Failed" if facts.oom_killed else "Succeeded"
    return facts.phase


def _roles(placed: list[tuple[PodFacts, str, int]]) -> dict[str, RoleSpec]:
    by_role: dict[str, list[tuple[PodFacts, int]]] = defaultdict(list)
    for facts, role, index in placed:
        by_role[role].append((facts, index))
    roles = {}
    for role, pods in sorted(by_role.items()):
        # The largest pod of the role: what the role asks of the cluster per pod.
        cpu = _largest(f.requests.get("cpu") for f, _ in pods)
        memory = _largest(f.requests.get("memory") for f, _ in pods)
        gpu = _largest(f.requests.get("nvidia_com_gpu") for f, _ in pods)
        cpu_limit = _largest(f.limits.get("cpu") for f, _ in pods)
        roles[role] = RoleSpec(
            count=len({index for _, index in pods}),
            cpu=cpu,
            memory_mib=None if memory is None else round(memory / MIB, 3),
            gpu=gpu,
            cpu_limit=cpu_limit if cpu_limit is not None and cpu_limit != cpu else None,
        )
    return roles


def _largest(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None and v > 0]
    return max(present) if present else None


def _labels_of(placed: list[tuple[PodFacts, str, int]]) -> dict[str, str]:
    """The labels the job's pods share in name-order precedence (the user and group
    labels are set on the job's template, so every pod carries the same)."""
    merged: dict[str, str] = {}
    for facts, _, _ in placed:
        for key, value in facts.labels.items():
            merged.setdefault(key, value)
    return merged
