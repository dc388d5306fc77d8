"""What an optimizer declares beyond its name and stages: the roles its proposals may
change, its position in a stage's default pipeline, and the costly context inputs it
reads.

Declared on the optimizer's class, so that nothing outside it names a plugin: the
default pipelines are the optimizers that declare a position there, in that order, and a
caller that applies only part of a plan (a DLRover master reads the PS group at one of
its stages and the worker group at another) runs the optimizers whose declared changes
that part carries; and the service builds a costly context input only when an optimizer
that runs reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from brain.domain import ROLE_PS, Stage
from brain.optimizing.proposal import Proposal

# Stands for every role, the well-known ones and any other a job declares.
ANY_ROLE = "*"


@dataclass(frozen=True)
class Changes:
    """The roles an optimizer's proposals may change, in two kinds.

    ``groups``: roles whose count or per-node size it may set (``Proposal.roles``,
    ``launch`` and ``remove``). ``nodes``: roles whose single nodes it may migrate, that
    is relaunch with another size or on another host (``Proposal.migrate``).
    """

    groups: frozenset[str] = frozenset()
    nodes: frozenset[str] = frozenset()

    def sets_group(self, role: str) -> bool:
        return role in self.groups or ANY_ROLE in self.groups

    def migrates(self, role: str) -> bool:
        return role in self.nodes or ANY_ROLE in self.nodes


# What a plugin that declares nothing may change: anything.
ANYTHING = Changes(groups=frozenset({ANY_ROLE}), nodes=frozenset({ANY_ROLE}))


def undeclared(changes: Changes, proposal: Proposal) -> list[str]:
    """What ``proposal`` changes that ``changes`` does not declare, e.g. ``["ps group"]``."""
    found = [f"{role} group" for role in proposal.roles if not changes.sets_group(role)]
    found += [
        f"{c.role} group"
        for c in [*proposal.launch, *proposal.remove]
        if not changes.sets_group(c.role)
    ]
    found += [f"{c.role} node {c.name}" for c in proposal.migrate if not changes.migrates(c.role)]
    if proposal.ps_hosts and not changes.sets_group(ROLE_PS):  # the PS tier's addresses
        found.append(f"{ROLE_PS} group")
    return list(dict.fromkeys(found))


class ContextInput(StrEnum):
    """A context input the service builds only for an optimizer that reads it (a query
    too costly to run on every call)."""

    memory_peaks = "memory_peaks"  # OptimizerContext.memory_peaks


# What a plugin that declares nothing reads: every input.
EVERY_INPUT = frozenset(ContextInput)


def reads_of(optimizer: Any) -> frozenset[ContextInput]:
    """The costly context inputs the optimizer declares it reads (``reads``); a plugin
    that declares none is given every one (so it sees what it saw before)."""
    declared = getattr(optimizer, "reads", None)
    return frozenset(declared) if _is_reads(declared) else EVERY_INPUT


def _is_reads(declared: Any) -> bool:
    return isinstance(declared, (set, frozenset)) and all(
        isinstance(item, ContextInput) for item in declared
    )


def changes_of(optimizer: Any) -> Changes:
    """The optimizer's declared ``changes``; a plugin that declares none may change
    anything (so it is never left out of a caller that filters by role)."""
    declared = getattr(optimizer, "changes", None)
    return declared if isinstance(declared, Changes) else ANYTHING


def default_position(optimizer: Any, stage: Stage) -> int | None:
    """Where the optimizer runs in ``stage``'s default pipeline (``default_order``;
    lower first, and a later optimizer's value wins where two set the same field), or
    ``None``: it runs there only when configured or requested."""
    return dict(getattr(optimizer, "default_order", {})).get(stage)


def check_declarations(optimizer: Any) -> None:
    """Raise ``TypeError`` when ``changes``, ``default_order`` or ``reads`` is declared but
    malformed, so that a plugin with a bad declaration is skipped at load rather than
    failing every request of a stage."""
    declared = getattr(optimizer, "changes", None)
    if declared is not None and not isinstance(declared, Changes):
        raise TypeError(f"changes is a {type(declared).__name__}, not a Changes")
    order = getattr(optimizer, "default_order", {})
    if not isinstance(order, Mapping):
        raise TypeError(f"default_order is a {type(order).__name__}, not a mapping")
    for stage, position in order.items():
        if stage not in optimizer.stages:
            raise TypeError(f"default_order names {stage!r}, a stage it does not serve")
        if isinstance(position, bool) or not isinstance(position, int):
            raise TypeError(f"default_order's position for {stage!r} is not a whole number")
    reads = getattr(optimizer, "reads", None)
    if reads is not None and not _is_reads(reads):
        raise TypeError(f"reads is a {type(reads).__name__}, not a set of ContextInput")
