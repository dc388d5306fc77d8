"""Last checks on what the optimizers of one stage proposed, before it becomes a plan.

A chain of bounding steps (``chain.CHAIN``), each in the module of its concern (most
hold one step; ``node_sizes`` holds the three size caps, ``change_factor`` two), each
``(proposal, view) -> (proposal, reasons)``: pure, returning the bounded proposal and
the reasons for what it changed. Together they keep a plan schedulable: no node above
the largest node, no zero or negative size, every role's count within its declared
``min_count``/``max_count``, the whole job within its limits, and, when the running
stage has a cluster state, no more new nodes than the cluster has room for. Elastic
workers (above ``min_count``) are given up first and added last: they make room for the
plan's other changes and are the nodes a shrinking plan names for removal.

The stage runs the chain; optimizers do not import it (``brain.optimizing.roles`` is
the arithmetic they share with it).
"""

from brain.optimizing.bounds.chain import CHAIN, enforce_bounds, run_chain
from brain.optimizing.bounds.view import BoundingStep, BoundsView

__all__ = ["CHAIN", "BoundingStep", "BoundsView", "enforce_bounds", "run_chain"]
