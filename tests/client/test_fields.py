"""The reference client takes every field the API takes, and drops none (its models
against the API's schemas: test_openapi_match.py)."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from api.schemas.plans import OptimizeRequest, PlanStatusIn
from brain.client import (
    BrainClient,
    BrainError,
    Event,
    JobLimits,
    JobRegistration,
    NodeUsage,
    RoleRequest,
)


def test_optimize_and_report_take_every_field_of_their_bodies():
    optimize = set(inspect.signature(BrainClient.optimize).parameters) - {"self", "uid"}
    report = set(inspect.signature(BrainClient.report).parameters) - {"self", "uid", "plan_id"}
    assert optimize == set(OptimizeRequest.model_fields)
    assert report == set(PlanStatusIn.model_fields)


def test_a_field_the_api_does_not_take_is_an_error_not_a_silent_drop(client):
    brain = BrainClient(http=client)
    with pytest.raises(ValidationError, match="grop"):
        JobRegistration(name="n", user="u", grop="u/n")
    with pytest.raises(ValidationError, match="gpu_mem"):
        NodeUsage(name="a", role="worker", ts=datetime.now(UTC), cpu=1, memory_mib=1, gpu_mem=5)
    with pytest.raises(ValidationError, match="finshed_at"):
        brain.update_job("never-sent", finshed_at=datetime.now(UTC))
    # Nothing reached the server: the job does not exist.
    assert client.get("/api/v1/jobs/never-sent").status_code == 404


def test_every_field_reaches_the_server(client):
    brain = BrainClient(http=client)
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    brain.register_job(
        "full-1",
        JobRegistration(
            name="bert",
            user="carol",
            dataset="wiki",
            group_key="nlp/bert",
            framework="pytorch",
            strategy="allreduce",
            namespace="ml",
            cluster="east",
            gpu_type="A100",
            limits=JobLimits(cpu=64, memory_mib=262144, gpu=8),
            roles={"worker": RoleRequest(count=2, cpu=8, memory_mib=32768, gpu=1, max_count=4)},
            total_steps=1000,
            status="succeeded",
            exit_reason="done",
            created_at=t0,
            started_at=t0,
            finished_at=t0 + timedelta(hours=1),
        ),
    )
    job = client.get("/api/v1/jobs/full-1").json()
    assert {k: job[k] for k in ("group_key", "framework", "namespace", "cluster", "gpu_type")} == {
        "group_key": "nlp/bert",
        "framework": "pytorch",
        "namespace": "ml",
        "cluster": "east",
        "gpu_type": "A100",
    }
    assert (job["strategy"], job["status"], job["exit_reason"], job["total_steps"]) == (
        "allreduce",
        "succeeded",
        "done",
        1000,
    )
    assert job["limits"] == {"cpu": 64, "memory_mib": 262144, "gpu": 8}
    assert job["roles"]["worker"]["max_count"] == 4

    brain.register_node(
        "full-1", "w-0", role="worker", cpu=8, memory_mib=32768, gpu=1, created_at=t0
    )
    ingested = brain.push_samples(
        "full-1",
        nodes=[
            NodeUsage(
                name="w-0",
                role="worker",
                ts=t0 + timedelta(minutes=1),
                cpu=6,
                memory_mib=20000,
                gpu_util=0.5,
                gpu_memory_mib=30000,
                gpu_memory_total_mib=40960,
                step_time_s=0.25,
            )
        ],
    )
    assert (ingested.accepted, ingested.duplicates) == (1, 0)
    sample = client.get("/api/v1/jobs/full-1/samples").json()["nodes"][0]
    assert (sample["gpu_util"], sample["gpu_memory_mib"], sample["gpu_memory_total_mib"]) == (
        0.5,
        30000,
        40960,
    )
    node = client.get("/api/v1/jobs/full-1/nodes").json()[0]
    assert (node["cpu"], node["gpu"]) == (8, 1)

    events = brain.report_events(
        "full-1", [Event(ts=t0, kind="started"), Event(ts=t0, kind="started")]
    )
    assert (events.accepted, events.duplicates) == (1, 1)

    brain.update_job("full-1", exit_reason=None)
    assert client.get("/api/v1/jobs/full-1").json()["exit_reason"] is None


def test_a_client_names_the_namespace_of_its_jobs(client):
    """Two namespaces hold the uid: a client for every namespace names its own."""
    for team, user in (("team-a", "ann"), ("team-b", "bea")):
        registration = JobRegistration(name="n", user=user, namespace=team)
        BrainClient(http=client, namespace=team).register_job("same-uid", registration)
    with pytest.raises(BrainError) as unnamed:
        BrainClient(http=client).plans("same-uid")
    assert (unnamed.value.status, unnamed.value.field) == (409, "namespace")
    team_b = BrainClient(http=client, namespace="team-b")
    plan = team_b.optimize("same-uid", "create")
    assert [p.id for p in team_b.plans("same-uid")] == [plan.id]
    assert BrainClient(http=client, namespace="team-a").plans("same-uid") == []
