"""Discovery of optimizers through the ``brain.optimizers`` entry-point group."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from brain.domain import Stage
from brain.optimizing.changes import changes_of, check_declarations, default_position
from brain.optimizing.context import OptimizerContext
from brain.optimizing.proposal import Proposal

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "brain.optimizers"


@runtime_checkable
class Optimizer(Protocol):
    """The plugin contract.

    ``name`` is unique; ``stages`` are the stages it serves; ``Settings`` is a pydantic
    model whose every field has a default, a description and bounds; the class
    docstring is its description. ``propose`` is pure: context and settings in,
    proposal out.

    Two more class attributes are optional (``brain.optimizing.changes``): ``changes``,
    the roles its proposals may change (without it: anything), and ``default_order``,
    its position in the default pipeline of each stage it runs at unless configured
    otherwise (without it: it runs only when configured or requested), and ``reads``,
    the costly context inputs (``ContextInput``) it reads, which the service builds only
    when an optimizer that runs reads them (without it: every one).
    """

    name: ClassVar[str]
    stages: ClassVar[frozenset[Stage]]
    Settings: ClassVar[type[BaseModel]]

    def propose(self, context: OptimizerContext, settings: Any) -> Proposal: ...


@dataclass(frozen=True)
class OptimizerInfo:
    name: str
    stages: list[str]
    description: str
    settings_schema: dict[str, Any]
    defaults: dict[str, Any]
    default_order: dict[str, int]
    changes: dict[str, list[str]]


class OptimizerRegistry:
    """The optimizers that loaded, by name."""

    def __init__(self, optimizers: Iterable[Optimizer] = ()) -> None:
        self._by_name: dict[str, Optimizer] = {}
        for optimizer in optimizers:
            self.add(optimizer)

    def add(self, optimizer: Optimizer) -> None:
        if optimizer.name in self._by_name:
            raise ValueError(f"optimizer name {optimizer.name!r} is registered twice")
        self._by_name[optimizer.name] = optimizer

    def get(self, name: str) -> Optimizer | None:
        return self._by_name.get(name)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def info(self) -> list[OptimizerInfo]:
        return [describe(self._by_name[name]) for name in self.names()]

    def default_pipeline(self, stage: Stage) -> list[str]:
        """The optimizers that declare a position in ``stage``'s default pipeline, in that
        order (ties by name)."""
        placed = [
            (position, name)
            for name, optimizer in self._by_name.items()
            if stage in optimizer.stages
            and (position := default_position(optimizer, stage)) is not None
        ]
        return [name for _, name in sorted(placed)]

    def default_pipelines(self) -> dict[str, list[str]]:
        """Every stage's default pipeline, stages without one left out."""
        pipelines = {stage.value: self.default_pipeline(stage) for stage in Stage}
        return {stage: names for stage, names in pipelines.items() if names}


def describe(optimizer: Optimizer) -> OptimizerInfo:
    doc = (type(optimizer).__doc__ or "").strip()
    changes = changes_of(optimizer)
    return OptimizerInfo(
        name=optimizer.name,
        stages=sorted(s.value for s in optimizer.stages),
        description=doc,
        settings_schema=optimizer.Settings.model_json_schema(),
        defaults=optimizer.Settings().model_dump(),
        default_order={
            stage.value: position
            for stage in sorted(optimizer.stages)
            if (position := default_position(optimizer, stage)) is not None
        },
        changes={
            "groups": sorted(changes.groups),
            "nodes": sorted(changes.nodes),
        },
    )


def _load(entry_point: EntryPoint) -> Optimizer:
    cls = entry_point.load()
    optimizer = cls()
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{entry_point.value} does not implement the Optimizer contract")
    if not (isinstance(optimizer.Settings, type) and issubclass(optimizer.Settings, BaseModel)):
        raise TypeError(f"{entry_point.value}.Settings is not a pydantic model")
    optimizer.Settings()  # every field must have a default
    check_declarations(optimizer)
    return optimizer


def load_registry(entry_points_: Iterable[EntryPoint] | None = None) -> OptimizerRegistry:
    """Load every optimizer of the entry-point group; a broken plugin is logged and skipped."""
    found = entry_points(group=ENTRY_POINT_GROUP) if entry_points_ is None else entry_points_
    registry = OptimizerRegistry()
    for ep in found:
        try:
            optimizer = _load(ep)
            registry.add(optimizer)
        except Exception as exc:  # a plugin must never take the service down
            log.error("skipping optimizer plugin %s (%s): %s", ep.name, ep.value, exc)
    return registry
