"""The real DistributedJobManager (k8s platform, optimizeMode cluster) started against
Brain: the ScalePlan custom resources it posts, and the pods its auto-scaler launches."""

from __future__ import annotations

import pytest
from dlrover.python.common.constants import JobOptStage, NodeType

from brain.config import Settings
from brain.optimizing import load_registry
from tests.builders import node_point
from tests.builders.dlrover import (
    JOB_UID,
    ElasticJobArgs,
    finished_run,
    job_body,
    pod,
    sized_scale_plan,
    start_master,
    ts,
)


@pytest.fixture
def settings(pg_url, db, tmp_path) -> Settings:
    """The seed create rules, whose sizes the numbers below work out (the default create
    stage adds learned_margin)."""
    seed = {**load_registry().default_pipelines(), "create": ["startup", "gpu_cpu"]}
    return Settings(database_url=pg_url, stage_optimizers=seed, model_dir=str(tmp_path / "m"))


def test_create_scaleplan_has_the_sizes_of_brains_plan_from_three_past_runs(
    brain, fake_k8s, dlrover_context
):
    rest = brain.rest
    # Three succeeded runs of alice's ctr-train on clicks, two PS and two workers each.
    # PS: summed mean CPU 6.0, 6.0, 7.2 (mean 6.4), single-PS peak 4.0, summed peak
    # memory 12000, 12600, 13000 MiB. Workers (the chief's sizing): peak 5.2 cores, 9000 MiB.
    finished_run(rest, "run-1", 3, [(3.0, 6000), (3.0, 6000)], [(4.1, 8000), (3.9, 7600)])
    finished_run(rest, "run-2", 2, [(3.5, 6500), (2.5, 6100)], [(5.2, 8400), (4.4, 8100)])
    finished_run(rest, "run-3", 1, [(4.0, 7000), (3.2, 6000)], [(4.8, 9000), (4.0, 8800)])
    assert rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body()).status_code == 201
    rest_plan = rest.post(f"/api/v1/jobs/{JOB_UID}/optimize", json={"stage": "create"}).json()
    # startup: 6.4 / 4.0 -> 2 PS of 4.0 cores, 13000 / 2 x 1.2 = 7800 MiB each;
    # the job has no chief, so its workers get the chief sizing: 5.2 cores, 9000 MiB.
    ps, chief = rest_plan["roles"]["ps"], rest_plan["roles"]["worker"]
    assert (ps["count"], ps["cpu"], ps["memory_mib"]) == (2, 4.0, 7800.0)
    assert (chief["cpu"], chief["memory_mib"]) == (5.2, 9000.0)

    # The ElasticJob asks 3 workers of 2 cores / 4096 MiB and leaves the PS to Brain.
    start_master(ElasticJobArgs(worker=(3, 2, 4096), ps=(0, 0, 0)), dlrover_context)

    specs = sized_scale_plan(fake_k8s)["spec"]["replicaResourceSpecs"]
    # PS count and size as Brain's plan says; workers and the chief the master folds out
    # of them (no chief replica) get the chief sizing, CPU rounded up to whole cores.
    assert specs["ps"] == {"replicas": 2, "resource": {"cpu": "4", "memory": "7800Mi"}}
    assert specs["worker"] == {"replicas": 2, "resource": {"cpu": "6", "memory": "9000Mi"}}
    assert specs["chief"] == {"replicas": 1, "resource": {"cpu": "6", "memory": "9000Mi"}}
    # What DLRover was told is a stored plan with the same roles as the REST one.
    stored = rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()
    assert [p["stage"] for p in stored] == ["create", "create"]
    assert stored[0]["roles"] == rest_plan["roles"]


def test_a_hot_ps_becomes_a_migration_the_master_performs(brain, fake_k8s, dlrover_context):
    rest = brain.rest
    assert rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body(name="dropin")).status_code == 201
    # ps-0 ran at 7.4-7.6 of its 8 cores (>= 80%) in its last 8 samples (hot_ps needs 8);
    # ps-1 idles.
    points = [
        node_point(pod("ps", index), ts(minutes), cpu, 9000)
        for index, load in ((0, (7.4,) * 5 + (7.4, 7.6, 7.5)), (1, (2.0,) * 5 + (2.0, 2.1, 1.9)))
        for minutes, cpu in zip((8, 7, 6, 5, 4, 3, 2, 1), load, strict=True)
    ]
    assert rest.post(f"/api/v1/jobs/{JOB_UID}/samples", json={"nodes": points}).status_code == 200
    manager = start_master(ElasticJobArgs(worker=(3, 4, 8192), ps=(2, 8, 12288)), dlrover_context)

    manager._job_optimizer.set_job_stage(JobOptStage.PS_RUNNING)
    plan = manager._job_optimizer.get_job_resource_plan()
    scale_plan = manager._job_autoscaler.execute_job_optimization_plan(plan)

    # hot_ps: peak 7.6 / target 0.6 = 12.67 -> 12.7 cores; the master gets whole cores (13)
    # and the PS's memory unchanged; it launches a new PS pod that takes ps-0's rank.
    assert {name: (r.cpu, r.memory) for name, r in plan.node_resources.items()} == {
        pod("ps", 0): (13, 12288)
    }
    launched = [
        (n.type, n.rank_index, n.config_resource.cpu, n.config_resource.memory)
        for n in scale_plan.launch_nodes
    ]
    assert launched == [(NodeType.PS, 0, 13, 12288)]
    created = fake_k8s.scale_plans()[-1]["spec"]["createPods"]
    assert [(p["type"], p["rankIndex"], p["resource"]) for p in created] == [
        ("ps", 0, {"cpu": "13", "memory": "12288Mi"})
    ]
    served = rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()[0]
    assert served["stage"] == "running" and served["optimizers"] == [
        "hot_ps",
        "ps_scaling",
        "oom_risk",
    ]
    assert served["migrate"] == [
        {"role": "ps", "name": pod("ps", 0), "cpu": 12.7, "memory_mib": 12288.0, "gpu": None}
    ]
