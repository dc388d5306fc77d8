"""Brain's gRPC server in-process (same app as REST) and the real DLRover 0.6.1 master code
pointed at it, with only the Kubernetes API calls replaced by in-memory fakes (the way
DLRover's own tests run its master)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest
from dlrover.python.brain import client as brain_client
from dlrover.python.common import comm
from dlrover.python.common.global_context import Context
from dlrover.python.master.stats.reporter import BrainReporter
from dlrover.python.scheduler.kubernetes import k8sClient
from fastapi.testclient import TestClient
from kubernetes import client as k8s

from api.app import create_app
from api.server import dlrover_grpc
from api.state import server_state
from brain.config import Settings
from tests.builders.dlrover import JOB_NAME, JOB_UID
from tests.ports import free_port


@dataclass
class Replies:
    """Every optimize answer the master received, as sent on the wire."""

    optimize: list = field(default_factory=list)
    requests: list = field(default_factory=list)


class _Recorder(grpc.UnaryUnaryClientInterceptor):
    def __init__(self, replies: Replies) -> None:
        self.replies = replies

    def intercept_unary_unary(self, continuation, details, request):
        outcome = continuation(details, request)
        if details.method.endswith("/optimize"):
            self.replies.requests.append(request)
            self.replies.optimize.append(outcome.result())
        return outcome


@dataclass
class Brain:
    rest: TestClient
    addr: str
    replies: Replies

    def settle(self) -> None:
        """Wait (bounded) until every report persist_metrics queued is stored."""
        assert server_state(self.rest.app).grpc_server.servicer.wait_for_reports(timeout_s=10)


def serve_brain(settings: Settings, monkeypatch) -> Iterator[Brain]:
    """Brain (REST and gRPC, wired as `brain serve` wires them) with the master's client
    pointed at it; the fixtures below and tests needing other settings use it."""
    port = free_port()
    # An optimize call past its deadline gets no plan; the default 1 s is for a served
    # Brain, and a test's call (the master in the same process) may queue longer under load.
    settings = settings.model_copy(update={"grpc_port": port, "grpc_optimize_timeout_s": 20})
    replies = Replies()
    with TestClient(create_app(settings, parts=[dlrover_grpc])) as rest:
        addr = f"127.0.0.1:{port}"
        # The master's own channel (its options and retry policy), readiness-checked as
        # build_brain_client does; the recording interceptor only watches the answers.
        monkeypatch.setenv("DLROVER_BRAIN_SERVICE_ADDR", addr)
        raw = comm.build_grpc_channel(addr)
        assert comm.grpc_server_ready(raw), "the DLRover channel could not reach Brain"
        channel = grpc.intercept_channel(raw, _Recorder(replies))
        monkeypatch.setattr(
            brain_client.GlobalBrainClient, "BRAIN_CLIENT", brain_client.BrainClient(channel)
        )
        # The master's metrics reporter is a process singleton holding the client it was
        # built with: each test builds its own.
        monkeypatch.setattr(BrainReporter, "_instance", None)
        yield Brain(rest, addr, replies)
        raw.close()
    # Whatever a test drove, no answer may carry a count-0 group: the master would record
    # 0 nodes of that role.
    for answer in replies.optimize:
        for plan in answer.job_optimize_plans:
            for role, group in plan.resource.task_group_resources.items():
                assert group.count > 0, (role, plan)


@pytest.fixture
def brain(settings, monkeypatch) -> Iterator[Brain]:
    """Brain on PostgreSQL serving REST (TestClient) and gRPC (a loopback port)."""
    yield from serve_brain(settings, monkeypatch)


@pytest.fixture
def brain_sqlite(sqlite_url, monkeypatch) -> Iterator[Brain]:
    yield from serve_brain(Settings(database_url=sqlite_url), monkeypatch)


@pytest.fixture
def dlrover_context(monkeypatch) -> Context:
    """The master's process-wide context, restored after the test."""
    context = Context.singleton_instance()
    for name in (
        "auto_ps_enabled",
        "auto_worker_enabled",
        "seconds_interval_to_change_ps",
        "relaunch_always",
    ):
        monkeypatch.setattr(context, name, getattr(context, name))
    return context


@dataclass
class FakeKubernetes:
    """What the master asked Kubernetes to do: custom resources (ScalePlan CRs) posted."""

    custom_resources: list[dict] = field(default_factory=list)
    # The ElasticJob the master reads back (its scaler needs the uid for owner references).
    elastic_job: dict = field(
        default_factory=lambda: {
            "apiVersion": "elastic.iml.github.io/v1alpha1",
            "kind": "ElasticJob",
            "metadata": {"name": JOB_NAME, "namespace": "default", "uid": JOB_UID},
            "spec": {"optimizeMode": "cluster", "distributionStrategy": "ParameterServerStrategy"},
        }
    )

    def scale_plans(self) -> list[dict]:
        return [r for r in self.custom_resources if r.get("kind") == "ScalePlan"]


@pytest.fixture
def fake_k8s(monkeypatch) -> FakeKubernetes:
    """k8sClient with every API call the master makes answered in memory."""
    fake = FakeKubernetes()
    instance = k8sClient.singleton_instance("default")

    def create_custom_resource(group, version, plural, body):
        fake.custom_resources.append(body)
        return True

    def no_pods(label_selector):
        return k8s.V1PodList(items=[], metadata=k8s.V1ListMeta(resource_version="1"))

    calls = {
        "create_custom_resource": create_custom_resource,
        "list_namespaced_pod": no_pods,
        "get_custom_resource": lambda *a, **k: fake.elastic_job,
        "delete_custom_resource": lambda *a, **k: True,
        "create_pod": lambda *a, **k: True,
        "delete_pod": lambda *a, **k: True,
        "create_service": lambda *a, **k: True,
        "patch_service": lambda *a, **k: True,
        "get_service": lambda *a, **k: None,
        "get_pod": lambda *a, **k: None,
    }
    for name, fn in calls.items():
        monkeypatch.setattr(instance, name, fn, raising=False)
    return fake
