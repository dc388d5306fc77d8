"""The reference client against the real app on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from brain.client import (
    BrainClient,
    BrainError,
    ClusterStatePush,
    JobLimits,
    JobRegistration,
    NodeUsage,
    RoleRequest,
    SpeedPoint,
)
from brain.domain import PlanStatus, Stage

T0 = datetime(2026, 3, 1, tzinfo=UTC)
WORKER = "ctr-1-edljob-worker-0"


@pytest.fixture
def brain(client) -> BrainClient:
    brain = BrainClient(http=client)
    brain.register_job(
        "ctr-1",
        JobRegistration(
            name="ctr",
            user="alice",
            limits=JobLimits(cpu=64),
            roles={
                "ps": RoleRequest(count=1, cpu=4, memory_mib=8192),
                "worker": RoleRequest(count=1, cpu=4, memory_mib=8192),
            },
            started_at=T0,
        ),
    )
    return brain


def test_a_job_master_loop_over_the_client(brain):
    brain.register_node("ctr-1", WORKER, role="worker", index=0, cpu=4, memory_mib=8192)
    ingested = brain.push_samples(
        "ctr-1",
        nodes=[NodeUsage(name=WORKER, role="worker", ts=T0, cpu=3.5, memory_mib=8000)],
        speed=[SpeedPoint(ts=T0, global_step=100, steps_per_sec=30, workers=1)],
    )
    assert (ingested.accepted, ingested.duplicates) == (2, 0)
    assert (
        brain.push_samples(
            "ctr-1", speed=[SpeedPoint(ts=T0, global_step=100, steps_per_sec=30, workers=1)]
        ).duplicates
        == 1
    )

    brain.report_event("ctr-1", "oom", T0 + timedelta(seconds=30), node=WORKER)
    plan = brain.optimize("ctr-1", Stage.oom, node=WORKER)
    # oom_recovery doubles the request: 8192 x 2 = 16384 MiB.
    assert [(m.name, m.memory_mib) for m in plan.migrate] == [(WORKER, 16384)]
    assert not plan.is_empty and plan.reasons[0].optimizer == "oom_recovery"

    assert [p.id for p in brain.pending_plans("ctr-1")] == [plan.id]
    assert brain.wait_for_plan("ctr-1", after=0, wait_s=0).id == plan.id
    assert brain.wait_for_plan("ctr-1", after=plan.id, wait_s=0) is None

    reported = brain.report("ctr-1", plan.id, PlanStatus.applied, "relaunched")
    assert reported.status == PlanStatus.applied
    assert brain.pending_plans("ctr-1") == []


def test_errors_carry_the_envelope(brain):
    with pytest.raises(BrainError) as error:
        brain.optimize("no-such-job", Stage.running)
    assert error.value.status == 404
    with pytest.raises(BrainError) as error:
        brain.optimize("ctr-1", Stage.oom)
    assert (error.value.status, error.value.field) == (422, "node")


def test_a_pushed_cluster_state_is_the_one_served(brain, client):
    brain.push_cluster_state(
        ClusterStatePush(source="simulator", ts=T0, nodes=3, free_cpu=2.5, pending_cpu=12)
    )
    state = client.get("/api/v1/cluster/state").json()
    assert (state["source"], state["free_cpu"], state["pending_cpu"]) == ("simulator", 2.5, 12)
    assert state["free_memory_mib"] is None  # not pushed: unknown, not 0
