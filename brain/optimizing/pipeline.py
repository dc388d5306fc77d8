"""One stage's optimizer run, the same for a job's plan and for a suggestion.

``run_stage`` selects the stage's optimizers (the request's list, else the configured
one), resolves their settings (defaults < configuration < request), runs each on the
context (a failing optimizer becomes a reason, not an error), combines the proposals
and bounds the result. It is pure: the caller builds the context and stores the result.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pydantic import BaseModel, ValidationError

from brain.config import Settings
from brain.domain import Stage
from brain.errors import InvalidInput
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.bounds.cpu_budget import budgeted_job
from brain.optimizing.changes import changes_of, undeclared
from brain.optimizing.combine import combine
from brain.optimizing.context import OptimizerContext
from brain.optimizing.proposal import Proposal, Reason
from brain.optimizing.registry import Optimizer, OptimizerRegistry

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageResult:
    """The bounded, combined proposal and the optimizers that made it, in run order."""

    proposal: Proposal
    optimizers: list[str]


def run_stage(
    registry: OptimizerRegistry,
    stage: Stage,
    context: OptimizerContext,
    settings: Settings,
    requested: list[str] | None = None,
    overrides: Mapping[str, dict] | None = None,
    selected: list[Optimizer] | None = None,
) -> StageResult:
    """Select, configure, run, combine and bound the optimizers of ``stage``.

    Raises ``InvalidInput`` (naming ``optimizers.N`` or ``settings.<optimizer>.<field>``)
    for an unknown optimizer, one that does not serve ``stage``, or a bad setting.
    ``selected``: what ``select_optimizers`` already chose for ``requested``, when the
    caller selected first (to build only the context inputs they read).
    """
    optimizers = (
        selected
        if selected is not None
        else select_optimizers(registry, stage, requested, settings)
    )
    resolved = resolve_settings(optimizers, settings.optimizer_settings, overrides or {})
    # The site's budget stands in for a missing CPU limit for the optimizers too, so they
    # size within it (an estimate for the budget, not for max_workers cut down after).
    budgeted = replace(context, job=budgeted_job(context.job, settings.default_job_cpu))
    proposals = [(o.name, _propose(o, budgeted, resolved[o.name])) for o in optimizers]
    bounded = enforce_bounds(
        combine(proposals),
        context.job,
        context.nodes,
        context.node_max,
        context.cluster,
        default_job_cpu=settings.default_job_cpu,
        max_change_factor=settings.max_change_factor,
        failed_nodes=context.failed_nodes,
        stage=stage,
    )
    return StageResult(bounded, [o.name for o in optimizers])


def stage_pipeline(registry: OptimizerRegistry, settings: Settings, stage: Stage) -> list[str]:
    """The names ``stage`` runs unless a request names its own: the configured list
    (``BRAIN_STAGE_OPTIMIZERS``), else the optimizers' declared default pipeline."""
    if settings.stage_optimizers is not None:
        return list(settings.stage_optimizers.get(stage, []))
    return registry.default_pipeline(stage)


def select_optimizers(
    registry: OptimizerRegistry, stage: Stage, requested: list[str] | None, settings: Settings
) -> list[Optimizer]:
    """The optimizers to run: the request's list, else the stage's configured pipeline."""
    names = requested if requested is not None else stage_pipeline(registry, settings, stage)
    chosen: list[Optimizer] = []
    for position, name in enumerate(names):
        optimizer = registry.get(name)
        field = f"optimizers.{position}" if requested is not None else "stage_optimizers"
        if optimizer is None:
            if requested is None:  # a configured optimizer that failed to load
                log.warning("configured optimizer %s is not loaded; skipping it", name)
                continue
            raise InvalidInput(f"no optimizer named {name!r}; see GET /api/v1/optimizers", field)
        if stage not in optimizer.stages:
            raise InvalidInput(f"optimizer {name!r} does not serve stage {stage.value!r}", field)
        chosen.append(optimizer)
    return chosen


def resolve_settings(
    optimizers: list[Optimizer], configured: Mapping[str, dict], requested: Mapping[str, dict]
) -> dict[str, BaseModel]:
    """Validated settings per optimizer: defaults, then configuration, then the request."""
    running = {o.name for o in optimizers}
    for name in requested:
        if name not in running:
            raise InvalidInput(
                f"settings given for {name!r}, which does not run", f"settings.{name}"
            )
    resolved: dict[str, BaseModel] = {}
    for optimizer in optimizers:
        values = {**configured.get(optimizer.name, {}), **requested.get(optimizer.name, {})}
        prefix = f"settings.{optimizer.name}"
        unknown = sorted(set(values) - set(optimizer.Settings.model_fields))
        if unknown:
            raise InvalidInput(
                f"{optimizer.name} has no setting {unknown[0]!r}", f"{prefix}.{unknown[0]}"
            )
        try:
            resolved[optimizer.name] = optimizer.Settings.model_validate(values)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise InvalidInput(f"{where}: {error['msg']}", f"{prefix}.{where}") from exc
    return resolved


def _propose(optimizer: Optimizer, context: OptimizerContext, settings: BaseModel) -> Proposal:
    try:
        proposal = optimizer.propose(context, settings)
    except Exception as exc:  # one broken optimizer must not sink the others
        log.exception("optimizer %s failed on job %s", optimizer.name, context.job.uid)
        return Proposal(reasons=[Reason(optimizer.name, f"optimizer failed: {exc!r}; ignored")])
    # Callers that apply part of a plan choose optimizers by their declared changes, so a
    # proposal beyond them would reach a master that ignores it, or one told otherwise.
    beyond = undeclared(changes_of(optimizer), proposal)
    if beyond:
        log.warning("optimizer %s changed %s, which it does not declare", optimizer.name, beyond)
        message = f"proposed changes it does not declare ({', '.join(beyond)}); ignored"
        return Proposal(reasons=[Reason(optimizer.name, message)])
    return proposal
