"""What an optimizer returns, and the plan body a stage's proposals become.

``Proposal`` is an optimizer's answer; ``PlanBody`` is what a stored ScalePlan contains
(written by the pipeline, read by the API, the Kubernetes rendering, the optimizer
context and the summaries), one typed model for every reader and writer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, Field

from brain.domain import RoleSpec

# Who the stage's own decisions name as having decided: bounds, limits, merges.
GUARD = "guard"


@dataclass(frozen=True)
class Reason:
    """One decision explained: who decided, on what evidence, against which threshold."""

    optimizer: Annotated[str, Field(description="Who decided (or `guard` for bounds and limits).")]
    message: Annotated[str, Field(description="The decision with its evidence and threshold.")]
    evidence: dict[str, Any] = field(default_factory=dict)
    threshold: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeChange:
    """A node to launch, remove or migrate (relaunch with a new size).

    ``name`` is ``None`` for a new node whose name the job master picks.
    Sizes are ``None`` where they do not apply (e.g. removal).
    """

    role: str
    name: Annotated[
        str | None, Field(description="Node name; null for a new node the master names.")
    ] = None
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


class PlanBody(BaseModel):
    """What a ScalePlan says: role sizes (complete: open fields hold the job's values),
    nodes to launch, remove or migrate, the PS hosts, why, and which optimizers ran."""

    roles: dict[str, RoleSpec] = Field(default_factory=dict)
    launch: list[NodeChange] = Field(default_factory=list)
    remove: list[NodeChange] = Field(default_factory=list)
    migrate: list[NodeChange] = Field(default_factory=list)
    ps_hosts: list[str] = Field(
        default_factory=list,
        description="PS addresses once the plan is applied, in rank order, as DLRover's "
        "psHosts (`<pod>.<namespace>.svc:2222`; new pods named as its master names them); "
        "empty for a job without PS.",
    )
    reasons: list[Reason] = Field(default_factory=list)
    optimizers: list[str] = Field(
        default_factory=list, description="Optimizers that ran for this plan."
    )
