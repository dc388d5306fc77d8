"""What every bounding step reads beside the proposal it bounds: the job, its nodes,
the largest node, the cluster and the site's bounds, and the proposal as the stage's
optimizers made it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from brain.domain import Resources, Stage
from brain.optimizing.bounds.cpu_budget import budgeted_job
from brain.optimizing.cluster import ClusterView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import Proposal, Reason


@dataclass(frozen=True)
class BoundsView:
    proposed: Proposal  # combined, before any step bounded it
    registered_job: JobView
    nodes: Sequence[NodeView]
    node_max: Resources
    cluster: ClusterView | None = None
    default_job_cpu: float | None = None  # the site's CPU budget of a job without a limit
    max_change_factor: float | None = None
    # Nodes that failed while their role still counts them: the limits count each place
    # no live node fills at the larger of such a node's size and the role's.
    failed_nodes: Sequence[NodeView] = ()
    # The stage whose plan this is (None: not known, bounded as any plan).
    stage: Stage | None = None

    @cached_property
    def job(self) -> JobView:
        """The job the steps bound the plan to: the site's CPU budget stands in for a
        CPU limit it was registered without."""
        return budgeted_job(self.registered_job, self.default_job_cpu)


# A bounding step: the proposal bounded one way, and the reasons for what it changed.
BoundingStep = Callable[[Proposal, BoundsView], tuple[Proposal, list[Reason]]]
