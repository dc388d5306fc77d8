"""The real DistributedJobManager migrates a hot PS as Brain's plan says, to a new pod
with the next id, and reports nothing back: Brain pairs the new pod, first seen in
samples, with the PS it replaces."""

from __future__ import annotations

from dlrover.python.common.constants import JobOptStage, NodeType

from tests.builders import node_point
from tests.builders.dlrover import JOB_UID, ElasticJobArgs, job_body, pod, start_master, ts


def _nodes(rest) -> dict[str, tuple[float, str]]:
    listed = rest.get(f"/api/v1/jobs/{JOB_UID}/nodes").json()
    return {n["name"]: (n["cpu"], n["status"]) for n in listed}


def test_the_new_pod_of_a_ps_the_master_migrated_takes_the_migrated_size(
    brain, fake_k8s, dlrover_context
):
    rest = brain.rest
    assert rest.put(f"/api/v1/jobs/{JOB_UID}", json=job_body(name="dropin")).status_code == 201
    # ps-0 runs hot (7.4-7.6 of its 8 cores in 8 samples), ps-1 idles: hot_ps moves ps-0.
    points = [
        node_point(pod("ps", index), ts(minutes), cpu, 9000)
        for index, cpu in ((0, 7.5), (1, 2.0))
        for minutes in (8, 7, 6, 5, 4, 3, 2, 1)
    ]
    assert rest.post(f"/api/v1/jobs/{JOB_UID}/samples", json={"nodes": points}).status_code == 200
    manager = start_master(ElasticJobArgs(worker=(3, 4, 8192), ps=(2, 8, 12288)), dlrover_context)
    manager._job_optimizer.set_job_stage(JobOptStage.PS_RUNNING)
    plan = manager._job_optimizer.get_job_resource_plan()
    scale_plan = manager._job_autoscaler.execute_job_optimization_plan(plan)

    # The master launched ps-0's replacement under its next id (2), 13 whole cores for
    # Brain's 7.5 / 0.6 = 12.5; it reports no plan status.
    [launched] = scale_plan.launch_nodes
    assert (launched.type, launched.id, launched.rank_index) == (NodeType.PS, 2, 0)
    served = rest.get(f"/api/v1/jobs/{JOB_UID}/plans").json()[0]
    assert served["status"] == "proposed"
    assert [(m["name"], m["cpu"]) for m in served["migrate"]] == [(pod("ps", 0), 12.5)]

    # The collector's next scrape sees ps-2 and ps-1, no more ps-0.
    seen = [node_point(pod("ps", index), ts(0.5), 3.0, 9000) for index in (1, 2)]
    assert rest.post(f"/api/v1/jobs/{JOB_UID}/samples", json={"nodes": seen}).status_code == 200
    nodes = _nodes(rest)
    # 2 PS declared and 2 running: ps-2 replaces ps-0 at the size Brain planned for it.
    assert nodes[pod("ps", 2)] == (12.5, "running")
    assert nodes[pod("ps", 0)] == (8.0, "migrated")
    assert nodes[pod("ps", 1)] == (8.0, "running")
