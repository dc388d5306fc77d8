"""BRAIN_K8S_LOOKUP: a job Brain has no registration for gets its request from its
ElasticJob, read through the Kubernetes API (here an in-memory fake of the
CustomObjectsApi calls, as DLRover's own tests fake its k8s client)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from dlrover.python.common.constants import NodeType, OptimizeMode
from dlrover.python.common.node import NodeGroupResource, NodeResource
from dlrover.python.master.resource.job import JobResource, PSJobResourceOptimizer

from api.dlrover import server
from api.dlrover.elasticjobs import ElasticJob, ElasticJobLookup, quantity, requested_roles
from brain.bounds import InputBounds
from brain.config import Settings
from brain.domain import RoleSpec
from tests.api.dlrover.conftest import serve_brain
from tests.builders.dlrover import JOB_NAME, JOB_UID, MIB, job_body


def elastic_job(uid: str, replicas: dict[str, tuple[int, dict]]) -> dict:
    """An ElasticJob custom object as the API returns it; per role replicas and requests."""
    return {
        "apiVersion": "elastic.iml.github.io/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": JOB_NAME, "namespace": "ml", "uid": uid},
        "spec": {
            "optimizeMode": "cluster",
            "replicaSpecs": {
                role: {
                    "replicas": count,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "main", "image": "train", "resources": {"requests": req}}
                            ]
                        }
                    },
                }
                for role, (count, req) in replicas.items()
            },
        },
    }


USERS_JOB = elastic_job(
    JOB_UID,
    {
        "ps": (2, {"cpu": "8", "memory": "12Gi"}),
        "worker": (3, {"cpu": "1500m", "memory": "4096Mi"}),
        "dlrover-master": (1, {"cpu": "1", "memory": "1Gi"}),
    },
)


@dataclass
class FakeCustomObjects:
    """The CustomObjectsApi calls Brain makes, answered from ``objects``."""

    objects: list[dict] = field(default_factory=list)
    calls: list[tuple] = field(default_factory=list)

    def list_cluster_custom_object(self, group, version, plural, **kwargs):
        self.calls.append((group, version, plural, None))
        return {"kind": "ElasticJobList", "items": list(self.objects)}

    def list_namespaced_custom_object(self, group, version, namespace, plural, **kwargs):
        self.calls.append((group, version, plural, namespace))
        found = [o for o in self.objects if o["metadata"]["namespace"] == namespace]
        return {"kind": "ElasticJobList", "items": found}


@pytest.fixture
def kubernetes(monkeypatch) -> FakeCustomObjects:
    fake = FakeCustomObjects([USERS_JOB])
    monkeypatch.setattr(server, "custom_objects_api", lambda kubeconfig: fake)
    return fake


@pytest.fixture
def brain_k8s(settings, kubernetes, monkeypatch) -> Iterator:
    """Brain serving gRPC with BRAIN_K8S_LOOKUP=true, wired as brain serve wires it."""
    yield from serve_brain(settings.model_copy(update={"k8s_lookup": True}), monkeypatch)


def _create(uid: str, worker=(3, 1, 4096), ps=(2, 8, 12288)):
    """The master's create call (PSJobResourceOptimizer), with the ElasticJob's values."""
    worker = NodeGroupResource(worker[0], NodeResource(worker[1], worker[2]))
    ps = NodeGroupResource(ps[0], NodeResource(ps[1], ps[2]))
    optimizer = PSJobResourceOptimizer(worker, ps, OptimizeMode.CLUSTER, uid)
    job = JobResource()
    job.node_group_resources = {NodeType.WORKER: worker, NodeType.PS: ps}
    optimizer.init_job_resource(job)
    return job


def _groups(brain) -> dict:
    groups = brain.replies.optimize[-1].job_optimize_plans[0].resource.task_group_resources
    return {r: (g.count, g.resource.cpu, g.resource.memory) for r, g in groups.items()}


def test_an_unregistered_jobs_create_answer_carries_its_elasticjob_request(
    brain_k8s, kubernetes, dlrover_context
):
    dlrover_context.auto_ps_enabled = dlrover_context.auto_worker_enabled = True
    job = _create(JOB_UID)

    # The ElasticJob's requests on the wire, memory in bytes, CPU in whole cores rounded
    # up (1500m -> 2).
    assert _groups(brain_k8s) == {"worker": (3, 2, 4096 * MIB), "ps": (2, 8, 12288 * MIB)}
    assert kubernetes.calls == [("elastic.iml.github.io", "v1alpha1", "elasticjobs", None)]
    # Stored as the job's request (the master's own replica is not a training role).
    stored = brain_k8s.rest.get(f"/api/v1/jobs/{JOB_UID}").json()["roles"]
    sizes = {r: (s["count"], s["cpu"], s["memory_mib"], s["gpu"]) for r, s in stored.items()}
    assert sizes == {"ps": (2, 8.0, 12288.0, 0.0), "worker": (3, 1.5, 4096.0, 0.0)}
    # The master keeps the user's worker count and PS values; workers get 2 cores.
    sizes = {
        role: (g.count, g.node_resource.cpu, g.node_resource.memory)
        for role, g in job.node_group_resources.items()
    }
    assert sizes == {NodeType.WORKER: (3, 2, 4096), NodeType.PS: (2, 8, 12288)}


def test_a_rest_registration_wins_over_the_elasticjob(brain_k8s, kubernetes, dlrover_context):
    body = job_body(roles={"worker": {"count": 3, "cpu": 4, "memory_mib": 8192}})
    assert brain_k8s.rest.put(f"/api/v1/jobs/{JOB_UID}", json=body).status_code == 201
    _create(JOB_UID)
    assert kubernetes.calls == []
    worker = _groups(brain_k8s)["worker"]
    assert worker == (3, 4, 8192 * MIB)


def test_neither_registered_nor_found_keeps_the_masters_values(
    brain_k8s, kubernetes, dlrover_context
):
    _create("some-other-uid")
    # Count 1 and size 0: the master keeps the ElasticJob's own values (README).
    assert _groups(brain_k8s) == {"worker": (1, 0, 0), "ps": (1, 0, 0)}
    assert len(kubernetes.calls) == 1


def test_an_unreadable_api_is_logged_and_answered_as_unknown(
    brain_k8s, kubernetes, dlrover_context, monkeypatch
):
    def forbidden(*args, **kwargs):
        raise RuntimeError("403 Forbidden: cannot list elasticjobs")

    monkeypatch.setattr(kubernetes, "list_cluster_custom_object", forbidden)
    _create(JOB_UID)
    assert _groups(brain_k8s) == {"worker": (1, 0, 0), "ps": (1, 0, 0)}


def test_one_list_serves_a_burst_and_a_namespace_limits_it():
    now = [0.0]
    fake = FakeCustomObjects([USERS_JOB, elastic_job("other", {"worker": (1, {"cpu": 1})})])
    lookup = ElasticJobLookup(fake, InputBounds(), namespace="ml", clock=lambda: now[0])
    assert lookup.requested_roles(JOB_UID)["worker"] == RoleSpec(
        count=3, cpu=1.5, memory_mib=4096.0
    )
    assert lookup.requested_roles("missing") == {}
    now[0] = 11.0  # older than the list cache: listed again
    assert lookup.requested_roles("missing") == {}
    assert fake.calls == [("elastic.iml.github.io", "v1alpha1", "elasticjobs", "ml")] * 2


def test_quantities():
    assert quantity("500m") == 0.5
    assert quantity("2") == 2.0 and quantity(3) == 3.0
    assert quantity("8Gi") == 8 * 2**30
    assert quantity("1G") == 1e9
    assert quantity("1e3") == 1000.0
    assert quantity("12Qi") is None and quantity("lots") is None
    assert quantity(float("inf")) is None


def test_implausible_or_missing_requests_are_left_out():
    job = ElasticJob.model_validate(
        elastic_job(
            "u",
            {
                "ps": (2, {"cpu": "2000", "memory": "1Gi"}),  # cpu above 1024 cores
                "worker": (0, {"cpu": "1", "memory": "1Gi"}),  # no replicas
                "chief": (1, {}),  # no request at all
                "evaluator": (1, {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}),
            },
        )
    )
    assert requested_roles(job, InputBounds()) == {
        "ps": RoleSpec(count=2, memory_mib=1024.0),
        "evaluator": RoleSpec(count=1, cpu=1.0, memory_mib=1024.0, gpu=1.0),
    }


def test_the_lookup_needs_the_k8s_extra(monkeypatch):
    def missing(kubeconfig):
        raise ImportError("No module named 'kubernetes'")

    monkeypatch.setattr(server, "custom_objects_api", missing)
    with pytest.raises(RuntimeError, match=r"brain\[k8s\]"):
        server.elastic_job_lookup(Settings(k8s_lookup=True))


def test_the_lookup_without_credentials_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a cluster
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    with pytest.raises(RuntimeError, match="no Kubernetes credentials"):
        server.elastic_job_lookup(Settings(k8s_lookup=True, k8s_kubeconfig=None))
