"""What an optimizer returns: a proposal that the service turns into a ScalePlan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from brain.domain import RoleSpec


@dataclass(frozen=True)
class Reason:
    """One decision explained: who decided, on what evidence, against which threshold."""

    optimizer: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    threshold: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeChange:
    """A node to launch, remove or migrate (relaunch with a new size).

    ``name`` is ``None`` for a new node whose name the job master picks.
    Sizes are ``None`` where they do not apply (e.g. removal).
    """

    role: str
    name: str | None = None
    cpu: float | None = None
    memory_mib: float | None = None
    gpu: float | None = None


@dataclass
class Proposal:
    """An optimizer's answer. Empty lists and roles mean "change nothing"."""

    roles: dict[str, RoleSpec] = field(default_factory=dict)
    launch: list[NodeChange] = field(default_factory=list)
    remove: list[NodeChange] = field(default_factory=list)
    migrate: list[NodeChange] = field(default_factory=list)
    ps_hosts: list[str] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    # The event a plan answers (OOM recovery), so the same event is never answered twice.
    source_event_id: int | None = None

    @property
    def is_empty(self) -> bool:
        return not (self.roles or self.launch or self.remove or self.migrate)
