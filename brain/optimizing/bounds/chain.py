"""The bounding steps in the order they run, and the stage's entry that runs them.

The order is part of what a plan says: sizes are made valid before counts are clipped,
workers are given up before sizes are cut, launches and migrations get what the roles
leave of the limits, and the cluster's room comes after the job's own limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from brain.domain import Resources, Stage
from brain.optimizing.bounds.change_factor import change_factor, migration_change_factor
from brain.optimizing.bounds.cluster_room import cluster_room
from brain.optimizing.bounds.cpu_budget import cpu_budget
from brain.optimizing.bounds.cpu_limits import cpu_limits
from brain.optimizing.bounds.elastic_workers import elastic_workers
from brain.optimizing.bounds.known_roles import known_roles
from brain.optimizing.bounds.largest_node import largest_node
from brain.optimizing.bounds.named_removals import named_removals
from brain.optimizing.bounds.node_changes import node_changes
from brain.optimizing.bounds.node_list_counts import node_list_counts
from brain.optimizing.bounds.node_sizes import launch_sizes, migration_sizes, role_sizes
from brain.optimizing.bounds.one_ps_change import one_ps_change
from brain.optimizing.bounds.replacements import replacements
from brain.optimizing.bounds.role_counts import role_counts
from brain.optimizing.bounds.shard_memory import shard_memory
from brain.optimizing.bounds.size_cuts import size_cuts
from brain.optimizing.bounds.view import BoundingStep, BoundsView
from brain.optimizing.bounds.worker_count import worker_count
from brain.optimizing.cluster import ClusterView
from brain.optimizing.context import JobView, NodeView
from brain.optimizing.proposal import Proposal

CHAIN: tuple[BoundingStep, ...] = (
    cpu_budget,
    known_roles,
    role_sizes,
    role_counts,
    change_factor,
    shard_memory,
    largest_node,
    worker_count,
    size_cuts,
    launch_sizes,
    node_list_counts,
    migration_sizes,
    migration_change_factor,
    one_ps_change,
    elastic_workers,
    node_changes,
    cluster_room,
    replacements,
    named_removals,
    cpu_limits,
)


def run_chain(
    proposal: Proposal, view: BoundsView, chain: Sequence[BoundingStep] = CHAIN
) -> Proposal:
    """``proposal`` through every step of ``chain`` in order, each step's reasons
    after the ones before; the input is left untouched."""
    bounded = replace(
        proposal,
        roles=dict(proposal.roles),
        launch=list(proposal.launch),
        remove=list(proposal.remove),
        migrate=list(proposal.migrate),
        ps_hosts=list(proposal.ps_hosts),
        reasons=list(proposal.reasons),
    )
    for step in chain:
        bounded, reasons = step(bounded, view)
        if reasons:
            bounded = replace(bounded, reasons=[*bounded.reasons, *reasons])
    return bounded


def enforce_bounds(
    proposal: Proposal,
    job: JobView,
    nodes: Sequence[NodeView],
    node_max: Resources,
    cluster: ClusterView | None = None,
    *,
    default_job_cpu: float | None = None,
    max_change_factor: float | None = None,
    failed_nodes: Sequence[NodeView] = (),
    stage: Stage | None = None,
) -> Proposal:
    """A copy of ``proposal`` that the cluster can schedule and the job's bounds allow.

    Sizes above ``node_max`` are capped; zero or negative CPU and memory, negative GPU
    counts and negative role counts are dropped (left to the job's current value).
    Counts are clipped into each role's ``min_count``/``max_count`` (launches and
    removals too). If the job's total (role count x size, current values where the
    proposal has none) exceeds ``job.limits``, the worker count is reduced, never below
    ``min_count``, until it fits, and what still exceeds is fitted by cutting the roles'
    sizes (``size_cuts``: the plan's growth first; a role larger than the largest node
    is cut to it); workers the plan adds above ``min_count`` are given up
    before a launch or migration of the plan would be cut. A shrinking role names the
    nodes it removes: the highest indices, the elastic ones. With a ``cluster`` state,
    the nodes a plan adds (role counts above the current ones, then launches) must fit
    the cluster's room, free minus pending demand: workers are given up first, then
    other roles' growth, then launches; the state used is a reason of its own. Each
    change is a reason. A job without a CPU limit is held to ``default_job_cpu`` (the
    site's budget) where one is set, and a plan that is not an OOM fix changes no role's
    count or size by more than ``max_change_factor`` (the trainers of the estimate
    ``stage``'s plan excepted). ``failed_nodes`` (nodes that failed while their role still
    counts them) count against the limits in the places
    no live node fills, each at the larger of its own size and its role's: the master
    may bring one back as it was.
    """
    view = BoundsView(
        proposed=proposal,
        registered_job=job,
        nodes=nodes,
        node_max=node_max,
        cluster=cluster,
        default_job_cpu=default_job_cpu,
        max_change_factor=max_change_factor,
        failed_nodes=failed_nodes,
        stage=stage,
    )
    return run_chain(proposal, view)
