"""Which job and node a Prometheus series belongs to.

Two ways, chosen by ``BRAIN_COLLECT_MAPPING``:

``pod_name`` (default)
    ``BRAIN_POD_NAME_PATTERN`` is matched against the ``pod`` label; its named groups give
    the job, the role and the index. The default is DLRover's pod naming,
    ``<job>-edljob-<role>-<index>`` (``mnist-edljob-worker-3``).
``labels``
    The job comes from ``BRAIN_JOB_LABEL`` (default ``label_elasticjob_dlrover_name``, the
    ``elasticjob.dlrover/name`` pod label as kube-state-metrics exports it); the role and
    the index from ``BRAIN_ROLE_LABEL`` / ``BRAIN_INDEX_LABEL``, falling back to the pod
    name pattern when a series lacks them.

Either way the node is the pod (its name is the node name) and the job key is compared
with the uid of the registered jobs first, then with their name, narrowed by namespace
when the job has one. A series that matches no job, or more than one, or whose pod or
role no node may be stored under (brain.names), is not stored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from brain.config import CollectorSettings
from brain.domain import K8S_NAME_MAX
from brain.names import name_problem
from brain.services.collector_store import CollectableJob

log = logging.getLogger(__name__)


class MappingConfigError(ValueError):
    """The mapping configuration cannot work."""


@dataclass(frozen=True, slots=True)
class PodRef:
    """A pod as the labels of a series name it."""

    job_key: str
    namespace: str | None
    pod: str
    role: str
    index: int


class SeriesMapper:
    """Turns the labels of a series into a ``PodRef``, or ``None``."""

    def __init__(
        self,
        mode: str = "pod_name",
        pod_name_pattern: str = r"^(?P<job>.+)-edljob-(?P<role>[a-z]+)-(?P<index>\d+)$",
        job_label: str = "label_elasticjob_dlrover_name",
        role_label: str = "label_elasticjob_dlrover_replica_type",
        index_label: str = "label_elasticjob_dlrover_replica_index",
    ) -> None:
        if mode not in ("pod_name", "labels"):
            raise MappingConfigError(f"unknown mapping {mode!r}; use pod_name or labels")
        try:
            self.pattern = re.compile(pod_name_pattern)
        except re.error as exc:
            raise MappingConfigError(f"BRAIN_POD_NAME_PATTERN is not a regex: {exc}") from exc
        groups = set(self.pattern.groupindex)
        needed = {"job", "role", "index"} if mode == "pod_name" else set()
        if needed - groups:
            raise MappingConfigError(
                "BRAIN_POD_NAME_PATTERN needs the named groups job, role and index; missing: "
                + ", ".join(sorted(needed - groups))
            )
        self.mode = mode
        self.job_label = job_label
        self.role_label = role_label
        self.index_label = index_label

    @classmethod
    def from_settings(cls, settings: CollectorSettings) -> SeriesMapper:
        return cls(
            mode=settings.collect_mapping,
            pod_name_pattern=settings.pod_name_pattern,
            job_label=settings.job_label,
            role_label=settings.role_label,
            index_label=settings.index_label,
        )

    def pod_ref(self, labels: Mapping[str, str]) -> PodRef | None:
        pod = labels.get("pod") or ""
        if not pod:
            return None
        namespace = labels.get("namespace") or None
        parsed = self.pattern.fullmatch(pod)
        if self.mode == "pod_name":
            if parsed is None:
                return None
            job, role, index = parsed.group("job"), parsed.group("role"), parsed.group("index")
        else:
            job = labels.get(self.job_label) or ""
            role = labels.get(self.role_label) or ""
            index = labels.get(self.index_label) or ""
            if parsed is not None:
                named = parsed.groupdict()
                role = role or named.get("role") or ""
                index = index or named.get("index") or ""
        if not job or not role:
            return None
        if name_problem(pod) or name_problem(role) or len(pod) > K8S_NAME_MAX or len(role) > 64:
            return None  # no node may be stored under it (brain.names)
        try:
            number = int(index)
        except (TypeError, ValueError):
            return None
        return PodRef(job_key=job, namespace=namespace, pod=pod, role=role, index=number)


class JobIndex:
    """Registered jobs by uid and by name, to resolve a ``PodRef``'s job key."""

    def __init__(self, jobs: Iterable[CollectableJob]) -> None:
        self.by_uid: dict[str, CollectableJob] = {}
        self.by_name: dict[str, list[CollectableJob]] = {}
        for job in jobs:
            self.by_uid[job.uid] = job
            self.by_name.setdefault(job.name, []).append(job)
        self._warned: set[tuple[str, str | None]] = set()

    def resolve(self, ref: PodRef) -> CollectableJob | None:
        job = self.by_uid.get(ref.job_key)
        if job is not None:
            return job
        candidates = self.by_name.get(ref.job_key, [])
        if ref.namespace is not None and len(candidates) > 1:
            # A job in the pod's namespace first, then jobs registered without one.
            same = [j for j in candidates if j.namespace == ref.namespace]
            candidates = same or [j for j in candidates if j.namespace is None]
        elif ref.namespace is not None:
            candidates = [j for j in candidates if j.namespace in (None, ref.namespace)]
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            key = (ref.job_key, ref.namespace)
            if key not in self._warned:
                self._warned.add(key)
                log.warning(
                    "pod %s/%s matches %d running jobs named %r (%s); not stored: give the "
                    "jobs a namespace or map by uid",
                    ref.namespace,
                    ref.pod,
                    len(candidates),
                    ref.job_key,
                    ", ".join(sorted(j.uid for j in candidates)),
                )
        return None
