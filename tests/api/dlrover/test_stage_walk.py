"""The master's resource optimizer (PSJobResourceOptimizer with BrainResoureOptimizer)
walking its stages against Brain: what it asks, and what it keeps of the answers."""

from __future__ import annotations

import pytest
from dlrover.python.brain import client as brain_client
from dlrover.python.common.constants import NodeType, OptimizeMode
from dlrover.python.common.node import NodeGroupResource, NodeResource
from dlrover.python.master.resource.brain_optimizer import BrainResoureOptimizer
from dlrover.python.master.resource.job import (
    JobResource,
    PSJobResourceOptimizer,
    new_ps_resource_optimizer,
)
from dlrover.python.master.resource.local_optimizer import PSLocalOptimizer
from dlrover.python.scheduler.job import ResourceLimits

from tests.builders.dlrover import JOB_UID, MIB, job_body

PHASE = "optimizer.worker.optimize-phase"


def test_the_master_finds_brain_and_cluster_mode_uses_it(brain):
    # The address variable is all the master needs: its import-time client connects.
    assert brain_client.build_brain_client().available()
    cluster = new_ps_resource_optimizer(OptimizeMode.CLUSTER, JOB_UID, ResourceLimits())
    single = new_ps_resource_optimizer(OptimizeMode.SINGLE_JOB, JOB_UID, ResourceLimits())
    assert isinstance(cluster, BrainResoureOptimizer)
    assert isinstance(single, PSLocalOptimizer)


def _walk(uid: str, worker: NodeGroupResource, ps: NodeGroupResource, steps: int):
    optimizer = PSJobResourceOptimizer(worker, ps, OptimizeMode.CLUSTER, uid)
    job = JobResource()
    job.node_group_resources = {NodeType.WORKER: worker, NodeType.PS: ps}
    optimizer.init_job_resource(job)
    plans = [optimizer.get_job_resource_plan() for _ in range(steps)]
    return job, plans


@pytest.fixture(params=["brain", "brain_sqlite"])
def any_brain(request):
    """Brain on PostgreSQL, and on the embedded SQLite default."""
    return request.getfixturevalue(request.param)


def test_stage_walk_asks_every_stage_and_keeps_the_user_worker_count(any_brain, dlrover_context):
    brain = any_brain
    dlrover_context.auto_ps_enabled = dlrover_context.auto_worker_enabled = True
    dlrover_context.seconds_interval_to_change_ps = 0
    assert brain.rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    worker = NodeGroupResource(3, NodeResource(2, 4096))
    ps = NodeGroupResource(0, NodeResource(0, 0))

    job, _ = _walk(JOB_UID, worker, ps, steps=5)

    asked = [(r.type, dict(r.config.customized_config)) for r in brain.replies.requests]
    assert asked == [
        ("job_stage_create", {}),
        ("job_stage_worker_initial", {PHASE: "initial"}),
        ("job_stage_ps_initial", {}),
        ("job_stage_ps_running", {}),
        ("job_stage_worker_initial", {PHASE: "sample"}),
        ("job_stage_ps_running", {}),
        ("job_stage_worker_running", {PHASE: "stable"}),
        ("job_stage_ps_running", {}),
        ("job_stage_worker_running", {PHASE: "stable"}),
    ]
    # No history: Brain tells the master the job's registered request (PS 2 x 8 cores x
    # 12288 MiB, workers 4 cores / 8192 MiB), not startup's defaults; the user's 3 workers
    # stay.
    create = brain.replies.optimize[0].job_optimize_plans[0].resource.task_group_resources
    assert (create["ps"].count, create["ps"].resource.cpu) == (2, 8)
    assert create["ps"].resource.memory == 12288 * MIB
    assert (create["worker"].resource.cpu, create["worker"].resource.memory) == (4, 8192 * MIB)
    workers, pss = job.node_group_resources[NodeType.WORKER], job.node_group_resources[NodeType.PS]
    assert (workers.count, workers.node_resource.cpu, workers.node_resource.memory) == (3, 4, 8192)
    assert (pss.count, pss.node_resource.cpu, pss.node_resource.memory) == (2, 8, 12288)
