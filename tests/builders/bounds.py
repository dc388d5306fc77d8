"""A bounding step's view of a job, with harmless defaults."""

from __future__ import annotations

from collections.abc import Sequence

from brain.domain import Resources
from brain.optimizing import JobView, NodeView, Proposal
from brain.optimizing.bounds import BoundsView
from brain.optimizing.cluster import ClusterView
from tests.builders.views import job as make_job

NODE_MAX = Resources(cpu=16, memory_mib=65536, gpu=8)


def view(
    job: JobView | None = None,
    nodes: Sequence[NodeView] = (),
    *,
    proposed: Proposal | None = None,
    node_max: Resources = NODE_MAX,
    cluster: ClusterView | None = None,
    default_job_cpu: float | None = None,
    max_change_factor: float | None = None,
    failed_nodes: Sequence[NodeView] = (),
) -> BoundsView:
    return BoundsView(
        proposed=proposed or Proposal(),
        registered_job=job or make_job(),
        nodes=list(nodes),
        node_max=node_max,
        cluster=cluster,
        default_job_cpu=default_job_cpu,
        max_change_factor=max_change_factor,
        failed_nodes=list(failed_nodes),
    )
