"""A DLRover job's own request, read from its ElasticJob through the Kubernetes API.

A DLRover master names its job by uid only. When Brain was never told the job's
request (no ``PUT /api/v1/jobs/{uid}``), its create answer would carry no sizes, so with
``BRAIN_K8S_LOOKUP`` Brain reads the ElasticJob custom object (group
``elastic.iml.github.io``, ``v1alpha1``, plural ``elasticjobs``) whose ``metadata.uid``
is the job's: per replica spec, ``replicas`` and the first container's
``resources.requests`` (``cpu``, ``memory``, ``nvidia.com/gpu``).

``CustomObjects`` is the part of ``kubernetes.client.CustomObjectsApi`` used here, so
``brain serve`` hands in the real client (``custom_objects_api``, the ``k8s`` extra)
and tests an in-memory fake. Objects are parsed into typed models at this edge; values
outside the plausible bounds are left out, never stored.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from brain.bounds import InputBounds
from brain.domain import TRAINING_ROLES, RoleSpec

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "elastic.iml.github.io", "v1alpha1", "elasticjobs"
# One list answers a burst of masters starting together; a job not found is looked up
# again only after this long (its ElasticJob may not be listed yet).
LIST_CACHE_S = 10.0
REQUEST_TIMEOUT_S = 0.5  # inside the optimize call's deadline (1 s by default)


class CustomObjects(Protocol):
    """What Brain calls of ``kubernetes.client.CustomObjectsApi``."""

    def list_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, **kwargs: Any
    ) -> dict: ...

    def list_cluster_custom_object(
        self, group: str, version: str, plural: str, **kwargs: Any
    ) -> dict: ...


# --- the ElasticJob, as far as Brain reads it -------------------------------------------


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


Quantity = str | int | float


class _Requests(_Loose):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    cpu: Quantity | None = None
    memory: Quantity | None = None
    gpu: Quantity | None = Field(None, alias="nvidia.com/gpu")


class _Resources(_Loose):
    requests: _Requests = Field(default_factory=_Requests)


class _Container(_Loose):
    resources: _Resources = Field(default_factory=_Resources)


class _PodSpec(_Loose):
    containers: list[_Container] = Field(default_factory=list)


class _Template(_Loose):
    spec: _PodSpec = Field(default_factory=_PodSpec)


class ReplicaSpec(_Loose):
    replicas: int | None = None
    template: _Template = Field(default_factory=_Template)


class _Metadata(_Loose):
    name: str = ""
    namespace: str = ""
    uid: str = ""


class _Spec(_Loose):
    replicaSpecs: dict[str, ReplicaSpec] = Field(default_factory=dict)  # noqa: N815 (CRD name)


class ElasticJob(_Loose):
    metadata: _Metadata = Field(default_factory=_Metadata)
    spec: _Spec = Field(default_factory=_Spec)


class _ObjectList(_Loose):
    """A list answer; its items are read one by one (one unreadable item is skipped)."""

    items: list[Any] = Field(default_factory=list)


# --- Kubernetes quantities ----------------------------------------------------------------

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}


def quantity(value: Quantity) -> float | None:
    """A Kubernetes quantity (``500m``, ``2``, ``8Gi``, ``1e9``) as a number; None if it
    is not one or not finite."""
    if isinstance(value, int | float):
        number = float(value)
    else:
        match = _QUANTITY.match(value.strip())
        if match is None or match[2] not in _SUFFIXES:
            return None
        try:
            number = float(match[1]) * _SUFFIXES[match[2]]
        except ValueError:
            return None
    return number if math.isfinite(number) else None


def requested_roles(job: ElasticJob, bounds: InputBounds) -> dict[str, RoleSpec]:
    """Each training role's replicas and per-pod request; a role whose values are missing
    or implausible is left out (and logged)."""
    roles = {}
    for role, spec in job.spec.replicaSpecs.items():
        if role not in TRAINING_ROLES:
            continue
        found = _role(spec, bounds)
        if found is None:
            log.warning(
                "ElasticJob %s/%s: replica spec %r has no plausible request; left out",
                job.metadata.namespace,
                job.metadata.name,
                role,
            )
            continue
        roles[role] = found
    return roles


def _role(spec: ReplicaSpec, bounds: InputBounds) -> RoleSpec | None:
    if spec.replicas is None or not 0 < spec.replicas <= bounds.nodes:
        return None
    containers = spec.template.spec.containers
    requests = containers[0].resources.requests if containers else _Requests()
    cpu = _within(requests.cpu, 1.0, bounds.cpu)
    memory = _within(requests.memory, 2.0**-20, bounds.memory_mib)  # bytes -> MiB
    gpu = _within(requests.gpu, 1.0, bounds.gpu)
    if cpu is None and memory is None:
        return None
    return RoleSpec(count=spec.replicas, cpu=cpu, memory_mib=memory, gpu=gpu)


def _within(value: Quantity | None, scale: float, most: float) -> float | None:
    number = None if value is None else quantity(value)
    if number is None:
        return None
    number *= scale
    return number if 0 < number <= most else None


# --- the lookup -----------------------------------------------------------------------------


class ElasticJobLookup:
    """The requests of the ElasticJob with a given uid, in ``namespace`` (None: every
    namespace, which needs a cluster-wide list permission). Thread-safe; one list call
    serves every lookup within ``LIST_CACHE_S``."""

    def __init__(
        self,
        api: CustomObjects,
        bounds: InputBounds,
        namespace: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._bounds = bounds
        self._namespace = namespace
        self._clock = clock
        self._lock = threading.Lock()
        self._listed_at: float | None = None
        self._by_uid: dict[str, ElasticJob] = {}

    def requested_roles(self, uid: str) -> dict[str, RoleSpec]:
        """The roles the ElasticJob ``uid`` requests; empty when it is not found (or the
        API cannot be read: logged)."""
        job = self._find(uid)
        return {} if job is None else requested_roles(job, self._bounds)

    def _find(self, uid: str) -> ElasticJob | None:
        with self._lock:
            fresh = self._listed_at is not None and self._clock() - self._listed_at < LIST_CACHE_S
            if not fresh:
                try:
                    self._by_uid = self._list()
                except Exception:  # the API server or its permissions: no request known
                    log.exception("cannot list ElasticJobs through the Kubernetes API")
                    return None
                self._listed_at = self._clock()
            return self._by_uid.get(uid)

    def _list(self) -> dict[str, ElasticJob]:
        if self._namespace is None:
            answer = self._api.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, _request_timeout=REQUEST_TIMEOUT_S
            )
        else:
            answer = self._api.list_namespaced_custom_object(
                GROUP, VERSION, self._namespace, PLURAL, _request_timeout=REQUEST_TIMEOUT_S
            )
        jobs = {}
        for item in _ObjectList.model_validate(answer).items:
            try:
                job = ElasticJob.model_validate(item)
            except ValidationError as exc:
                log.warning("an ElasticJob that cannot be read is skipped: %s", exc)
                continue
            if job.metadata.uid:
                jobs[job.metadata.uid] = job
        return jobs


def custom_objects_api(kubeconfig: str | None) -> CustomObjects:
    """The real client (the ``k8s`` extra): the pod's service account inside a cluster,
    else ``kubeconfig`` (None: ``$KUBECONFIG`` or ``~/.kube/config``)."""
    from kubernetes import client, config

    if kubeconfig is None:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            config.load_kube_config()
    else:
        config.load_kube_config(config_file=kubeconfig)
    return client.CustomObjectsApi()
