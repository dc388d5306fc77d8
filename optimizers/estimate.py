"""Worker and PS sizing from the first minutes of a PS job, when only the chief trains."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import ClassVar

import numpy as np
from pydantic import Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage, Strategy
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    NodeView,
    OptimizerContext,
    PlanView,
    Proposal,
    Reason,
)
from optimizers import allreduce_estimate
from optimizers._common import (
    CpuStepSettings,
    ceil_mib,
    ceil_to,
    fit_line,
    mean_cpu,
    mean_memory,
    no_change,
    over_limits,
    reason,
    seconds_since,
    too_early,
)

NAME = "estimate"
# The least share of their linear load (PS CPU per trainer x trainers) the PS keep when
# one more trainer is squeezed in: speed, and so PS load, grows slower than the trainers
# (beta 0.13 at 3 trainers: 0.8 of linear).
_SQUEEZE_FLOOR = 0.8
# The least spread of the PS's shares of the model (largest - smallest) from which their
# memory tells each PS's own part from its shard: below it the line through them is noise.
_SPLIT_SPREAD = 0.1


class EstimateSettings(CpuStepSettings):
    factor: float = Field(
        1.2,
        ge=1.0,
        le=4.0,
        description="Margin on used CPU/memory when sizing workers and PS memory.",
    )
    growth_threshold: float = Field(
        0.02,
        ge=0.001,
        le=10.0,
        description="Relative growth of total PS memory over the observed steps above which it "
        "counts as growing (sparse embeddings), when the fitted rate is also at least "
        "twice its standard error (not noise).",
    )
    growth_horizon_s: float = Field(
        3600,
        ge=0,
        le=30 * 86400,
        description="Without total_steps, growing PS memory is sized for this many seconds "
        "ahead at the current speed (the PS change interval: oom_risk follows after).",
    )
    min_growth_points: int = Field(
        3, ge=2, le=1000, description="Speed samples needed to fit PS memory against global step."
    )
    ready_after_s: float = Field(
        180,
        ge=0,
        le=86400,
        description="Seconds of training observed (from the first speed or trainer sample) "
        "before the estimate is made: the design's ~3 minutes of chief-only training.",
    )
    min_samples: int = Field(
        6, ge=1, le=1000, description="Usage samples of the trainer and of every PS needed."
    )
    max_workers: int = Field(
        64,
        ge=1,
        le=10000,
        description="Most workers (chief included) when the job has no CPU limit.",
    )
    round_up_from: float = Field(
        0.75,
        ge=0.0,
        le=1.0,
        description="Fraction of one more trainer the CPU limit leaves (limit / (trainer CPU "
        "+ PS CPU per trainer) = 2.88: 0.88) from which that trainer is added and the PS get "
        "what the limit leaves: speed grows slower than the trainers, and so does the PS "
        "load per trainer measured with fewer of them. 1: never.",
    )
    cpu_bound_at: float = Field(
        0.9,
        ge=0.1,
        le=1.0,
        description="A node using at least this fraction of its CPU request is CPU-bound: its "
        "use understates what it needs.",
    )


@dataclass(frozen=True)
class _PsMemoryFit:
    rate_mib_per_step: float
    intercept_mib: float
    relative_growth: float
    rate_stderr: float  # standard error of the rate
    last_step: float
    # Each PS's share of the growth (its own fitted rate over the tier's): a PS grows
    # with its shard, the hot one faster.
    growth_shares: dict[str, float]

    @property
    def significant(self) -> bool:
        return self.rate_mib_per_step > 2 * self.rate_stderr

    def at(self, step: float) -> float:
        """Total PS memory at ``step``, on the rate one standard error up."""
        return self.intercept_mib + (self.rate_mib_per_step + self.rate_stderr) * step


class ResourceEstimateOptimizer:
    """Sizes workers and PS of a PS job from the usage of its chief and PS, once; an
    all-reduce job's workers from their own usage (``optimizers.allreduce_estimate``).

    It is ready after ``ready_after_s`` of training with ``min_samples`` samples of the
    trainer and every live PS (failed nodes do not count); until then, and after an
    estimate was applied, it proposes nothing and says why. The trainer is the chief,
    or worker 0 of a job without a chief (DLRover makes it the chief).
    The PS load per worker is the total PS CPU over the workers that trained meanwhile
    (the speed samples' count; 1, the chief, without them).
    ``workers = floor(cpu limit / (chief CPU + PS CPU per worker))`` counts the chief:
    with a chief role the proposal sets ``chief.count = 1`` and ``worker.count = workers
    - 1``, without one ``worker.count = workers``. Workers get the trainers' peak memory x
    factor and its mean CPU: x factor when the chief or a PS is CPU-bound (uses at least
    ``cpu_bound_at`` of its request: what it uses understates what it needs), else as
    used, with the factor as their CPU limit. The PS serve ``workers x PS CPU per
    worker`` (the load grows at most like the workers: the margin):
    ``ps.count = ceil(that / PS request)``, each PS its share, or its request when a PS
    is CPU-bound. PS memory is the mean total PS memory, or, when it grows with the
    global step, the fitted total at ``job.total_steps``; either way shared among the
    PS, x factor (the fitted rate one standard error up; a growth counts when it is at
    least ``growth_threshold`` and twice its standard error; without ``total_steps`` it
    is sized ``growth_horizon_s`` ahead at the current speed). Each PS gets at least the
    most one PS held plus its share of that growth (its own fitted rate over the
    tier's), x factor: a PS holds a fixed part of its own besides its shard, which
    splitting the model over more PS does not shrink. PS whose memory grew at different
    rates tell that part from their shards: more PS then each get their own part plus
    the largest one's share of the model (``_PsSplit``), x factor. If the plan exceeds
    the job's CPU, memory or GPU limits, workers are reduced first.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.estimate})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.estimate: 10}
    Settings: ClassVar[type[EstimateSettings]] = EstimateSettings

    def propose(self, context: OptimizerContext, settings: EstimateSettings) -> Proposal:
        applied = [
            p.id
            for p in context.plans
            if p.stage == Stage.estimate and p.status == PlanStatus.applied and not _empty(p)
        ]
        if applied:
            return no_change(
                NAME,
                f"already estimated: plan {applied[-1]} was applied; later changes are the "
                "running stage's",
                {"plan": applied[-1]},
            )
        if context.job.strategy != Strategy.ps:
            return allreduce_estimate.propose(context, settings)
        has_chief = ROLE_CHIEF in context.job.roles or bool(context.nodes_of(ROLE_CHIEF))
        trainer = _trainer(context, has_chief)
        ps_nodes = context.nodes_of(ROLE_PS)
        not_ready = _not_ready(context, trainer, ps_nodes, settings)
        if not_ready is not None:
            return not_ready
        use = _measure(context, trainer, ps_nodes, has_chief, settings)
        if use.training_cpu <= 0 or use.ps_request_cpu <= 0:
            return no_change(
                NAME,
                "chief and PS use no CPU yet, or the PS request no CPU",
                {"training_cpu": use.training_cpu, "ps_request_cpu": use.ps_request_cpu},
            )
        size = _size(context, use, settings)
        workers, roles, over = _fit(context, use, size, settings)
        return _explain(context, use, size, workers, roles, over, settings)


@dataclass(frozen=True)
class _Use:
    """What the trainer and the PS used while the trainer trained (alone, at first)."""

    trainer: NodeView
    has_chief: bool
    chief_cpu: float  # mean cores
    chief_memory_mib: float  # peak
    trainer_memory_mib: float  # peak of any trainer (chief or worker)
    ps_cpu_used: float  # mean cores, all PS together
    ps_memory_used_mib: float  # mean, all PS together
    ps_memory_peaks_mib: dict[str, float]  # the most each PS held
    trainers: int  # workers (chief included) training meanwhile
    ps_request_cpu: float  # the largest PS request
    chief_bound: bool
    ps_bound: bool

    @property
    def ps_cpu_per_worker(self) -> float:
        return self.ps_cpu_used / self.trainers

    @property
    def training_cpu(self) -> float:
        """Cores one more trainer costs: its own and its share of the PS."""
        return self.chief_cpu + self.ps_cpu_per_worker


@dataclass(frozen=True)
class _Size:
    """Each worker's size, the worker count the CPU limit allows and the PS memory."""

    worker: RoleSpec
    margin: float  # on the worker's CPU request
    workers: int  # chief included, before fitting the job's limits
    squeeze_ps: bool  # the last worker was added on what the PS leave of the CPU limit
    ps_memory_total_mib: float
    # The least each PS is sized for, before the factor: the most one PS held, plus its
    # share of the growth the total is sized for. A PS holds a fixed part of its own
    # (runtime, buffers) besides its shard, and a shard only shrinks with more PS: no PS
    # needs more than the most one holds now at the same share, and none can be sized
    # below it without knowing that fixed part.
    ps_memory_floor_mib: float
    ps_memory_reason: Reason
    # Each PS's own part and the model's shares, when the data tell them apart (None:
    # they do not, and every PS keeps at least the most one PS holds).
    ps_split: _PsSplit | None = None


@dataclass(frozen=True)
class _PsSplit:
    """The PS tier's memory told apart: what each PS holds of its own (runtime, buffers)
    and what it holds of the model, from PS that hold different shares of it."""

    overhead_mib: float  # the most any PS holds of its own
    model_mib: float  # the model, all PS together, at the size the tier is sized for
    largest_share: float  # the largest PS's share of the model now
    smallest_share: float
    count: int  # PS measured

    def share_at(self, ps_count: int) -> float:
        """The largest PS's share of the model over ``ps_count`` PS: the part that a
        hot PS holds beyond the others stays on one PS, the rest splits evenly."""
        hot = self.largest_share - self.smallest_share
        return hot + self.smallest_share * self.count / ps_count

    def need_at(self, ps_count: int) -> float:
        return self.overhead_mib + self.share_at(ps_count) * self.model_mib


def _measure(
    context: OptimizerContext,
    trainer: NodeView,
    ps_nodes: list[NodeView],
    has_chief: bool,
    settings: EstimateSettings,
) -> _Use:
    chief_samples = context.samples_of(trainer.name)
    chief_cpu = mean_cpu(chief_samples)
    chief_memory = max(s.memory_mib for s in chief_samples)
    # Workers are sized for the most any trainer held, not only the one measured:
    # a worker that already runs may hold more than the chief.
    trainer_memory = max(
        [chief_memory]
        + [
            s.memory_mib
            for n in context.nodes_of(ROLE_WORKER) + context.nodes_of(ROLE_CHIEF)
            for s in context.samples_of(n.name)
        ]
    )
    ps_cpus = {n.name: mean_cpu(context.samples_of(n.name)) for n in ps_nodes}
    bound = settings.cpu_bound_at
    return _Use(
        trainer=trainer,
        has_chief=has_chief,
        chief_cpu=chief_cpu,
        chief_memory_mib=chief_memory,
        trainer_memory_mib=trainer_memory,
        ps_cpu_used=sum(ps_cpus.values()),
        ps_memory_used_mib=sum(mean_memory(context.samples_of(n.name)) for n in ps_nodes),
        ps_memory_peaks_mib={
            n.name: max(s.memory_mib for s in context.samples_of(n.name)) for n in ps_nodes
        },
        # The PS serve every worker that trains, not only the chief: their load per worker.
        trainers=_trainers(context),
        ps_request_cpu=max(n.cpu for n in ps_nodes),
        chief_bound=chief_cpu >= bound * trainer.cpu,
        ps_bound=any(ps_cpus[n.name] >= bound * n.cpu for n in ps_nodes),
    )


def _size(context: OptimizerContext, use: _Use, settings: EstimateSettings) -> _Size:
    limit_cpu = context.job.limits.cpu
    workers = settings.max_workers if limit_cpu is None else int(limit_cpu // use.training_cpu)
    workers = max(workers, 1)
    # A trainer held back by its own CPU or by busy PS uses less than it needs: the
    # margin goes on its request. One that is neither is bound elsewhere (input, GPU):
    # it is requested what it uses, the margin going to its CPU limit for bursts.
    margin = settings.factor if use.chief_bound or use.ps_bound else 1.0
    worker = RoleSpec(
        cpu=ceil_to(use.chief_cpu * margin, settings.cpu_step),
        memory_mib=ceil_mib(use.trainer_memory_mib * settings.factor),
        cpu_limit=None
        if margin > 1
        else ceil_to(use.chief_cpu * settings.factor, settings.cpu_step),
    )
    # Most of one more trainer fits (and PS that are not busy would still get at least
    # _SQUEEZE_FLOOR of their linear share): add it, the PS taking what the limit leaves.
    squeeze_ps = False
    if limit_cpu is not None and not use.ps_bound:
        share = limit_cpu / use.training_cpu - workers
        left = limit_cpu - (workers + 1) * worker.cpu
        linear = use.ps_cpu_per_worker * (workers + 1)
        if share >= settings.round_up_from and left >= _SQUEEZE_FLOOR * linear:
            squeeze_ps = True
            workers += 1
    ps_memory_total, growing, ps_memory_reason = _ps_memory_total(
        context, use.ps_memory_used_mib, settings
    )
    grown = max(ps_memory_total - use.ps_memory_used_mib, 0.0)
    ps_memory_floor = max(
        peak + grown * (growing.growth_shares.get(name, 0.0) if growing else 0.0)
        for name, peak in use.ps_memory_peaks_mib.items()
    )
    return _Size(
        worker,
        margin,
        workers,
        squeeze_ps,
        ps_memory_total,
        ps_memory_floor,
        ps_memory_reason,
        _ps_split(use, growing, ps_memory_total),
    )


def _ps_split(use: _Use, growing: _PsMemoryFit | None, total_mib: float) -> _PsSplit | None:
    """Each PS's own part, from PS whose memory grew at different rates: a PS grows with
    its shard of the model (its share: its rate over the tier's), and its own part does
    not grow. With peaks ``m_i = own + share_i x model``, the line through the PS gives
    the model (its slope) and each PS's own part (``m_i - share_i x model``; the most of
    them is kept). None when one PS or PS of equal shares cannot tell them apart, or
    memory does not grow: CPU shares would be no guide to memory (a PS past its CPU knee
    uses more than its traffic share, and a share off by 0.01 moves the own part by 1 %
    of the model)."""
    peaks = use.ps_memory_peaks_mib
    if growing is None or len(peaks) < 2:
        return None
    rates = {name: growing.growth_shares.get(name, 0.0) for name in peaks}
    total_rate = sum(rates.values())
    if total_rate <= 0:
        return None
    shares = {name: rate / total_rate for name, rate in rates.items()}
    if max(shares.values()) - min(shares.values()) < _SPLIT_SPREAD:
        return None
    x = np.array([shares[n] for n in peaks])
    y = np.array([peaks[n] for n in peaks])
    model = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    if model <= 0:
        return None
    own = min(max(float((y - x * model).max()), 0.0), float(y.min()))
    return _PsSplit(
        overhead_mib=own,
        model_mib=max(total_mib, float(y.sum())) - own * len(peaks),
        largest_share=float(x.max()),
        smallest_share=float(x.min()),
        count=len(peaks),
    )


def _plan_for(
    context: OptimizerContext, use: _Use, size: _Size, workers: int, settings: EstimateSettings
) -> dict[str, RoleSpec]:
    """Every role's spec for ``workers`` trainers (chief included) and the PS they need."""
    # PS load grows at most like the worker count (speed grows slower): the margin.
    ps_cpu_total = use.ps_cpu_per_worker * workers
    if size.squeeze_ps and workers == size.workers:
        ps_cpu_total = min(ps_cpu_total, context.job.limits.cpu - workers * size.worker.cpu)
    ps_count = max(math.ceil(ps_cpu_total / use.ps_request_cpu - 1e-9), 1)
    # Busy PS keep their request; others get their share of the load.
    ps_cpu = use.ps_request_cpu
    if not use.ps_bound:
        ps_cpu = min(ceil_to(ps_cpu_total / ps_count, settings.cpu_step), use.ps_request_cpu)
    ps_memory = ceil_mib(_ps_memory_need(size, ps_count) * settings.factor)
    # The chief trains like a worker: it is sized like one.
    trainers = (
        {
            ROLE_CHIEF: replace(size.worker, count=1),
            ROLE_WORKER: replace(size.worker, count=workers - 1),
        }
        if use.has_chief
        else {ROLE_WORKER: replace(size.worker, count=workers)}
    )
    return trainers | {ROLE_PS: RoleSpec(count=ps_count, cpu=ps_cpu, memory_mib=ps_memory)}


def _ps_memory_need(size: _Size, ps_count: int) -> float:
    """What each of ``ps_count`` PS needs, before the margin. Each PS its share of the
    tier's total, never less than one PS holds now (a PS's own part does not shrink when
    the model is split over more of them), unless the tier told its own part from its
    shards: then more PS each need their own part plus their share of the model, and
    fewer PS at least that."""
    kept = max(size.ps_memory_total_mib / ps_count, size.ps_memory_floor_mib)
    split = size.ps_split
    if split is None:
        return kept
    if ps_count > split.count:
        return split.need_at(ps_count)
    return max(kept, split.need_at(ps_count))


def _fit(
    context: OptimizerContext, use: _Use, size: _Size, settings: EstimateSettings
) -> tuple[int, dict[str, RoleSpec], dict[str, tuple[float, float]]]:
    """The most workers (down to one) whose plan fits the job's limits: ``(workers,
    roles, limits still exceeded)``. Fewer workers also need fewer PS, so the whole plan
    is redone per count."""
    workers = size.workers
    while True:
        roles = _plan_for(context, use, size, workers, settings)
        over = over_limits(context, roles)
        if not over or workers == 1:
            return workers, roles, over
        workers -= 1


def _explain(
    context: OptimizerContext,
    use: _Use,
    size: _Size,
    workers: int,
    roles: dict[str, RoleSpec],
    over: dict[str, tuple[float, float]],
    settings: EstimateSettings,
) -> Proposal:
    ps_count = roles[ROLE_PS].count
    ps_cpu = roles[ROLE_PS].cpu
    trainer = use.trainer
    evidence = {
        "trainer": trainer.name,
        "chief_cpu": round(use.chief_cpu, 3),
        "chief_memory_mib": round(use.chief_memory_mib, 1),
        "trainer_memory_peak_mib": round(use.trainer_memory_mib, 1),
        "total_ps_cpu": round(use.ps_cpu_used, 3),
        "workers_training": use.trainers,
        "ps_cpu_per_worker": round(use.ps_cpu_per_worker, 3),
        "chief_cpu_bound": use.chief_bound,
        "ps_cpu_bound": use.ps_bound,
        "total_ps_memory_mib": round(use.ps_memory_used_mib, 1),
        "training_cpu": round(use.training_cpu, 3),
        "workers": workers,
        "ps_count": ps_count,
    }
    limits = {k: v for k, v in asdict(context.job.limits).items() if v is not None}
    if over:
        return no_change(
            NAME,
            "even one worker (the chief) with its PS exceeds the job's limits: "
            + ", ".join(f"{k} {t:g} > {lim:g}" for k, (t, lim) in over.items()),
            evidence,
            limits,
        )
    worker = size.worker
    reasons = [
        reason(
            NAME,
            f"chief uses {use.chief_cpu:.2f} cores and PS {use.ps_cpu_used:.2f} cores for "
            f"{use.trainers} training worker(s): {workers} workers (chief included) of "
            f"{worker.cpu} cores / {worker.memory_mib:.0f} MiB ({trainer.name}'s mean CPU "
            f"x{size.margin:g}{_why_margin(use.chief_bound, use.ps_bound)}, peak memory "
            f"x{settings.factor}), {ps_count} PS of {ps_cpu} cores "
            f"({use.ps_cpu_per_worker:.2f} PS cores per worker"
            f"{', busy PS keep their request' if use.ps_bound else ''}) and "
            f"{roles[ROLE_PS].memory_mib:.0f} MiB ({_ps_memory_basis(size, ps_count)} "
            f"x{settings.factor})",
            evidence
            | {
                "ps_memory_floor_mib": round(size.ps_memory_floor_mib, 1),
                "ps_own_memory_mib": None
                if size.ps_split is None
                else round(size.ps_split.overhead_mib, 1),
            },
            {
                "factor": settings.factor,
                "cpu_bound_at": settings.cpu_bound_at,
                "cpu_limit": context.job.limits.cpu,
            },
        ),
        size.ps_memory_reason,
    ]
    if workers < size.workers:
        reasons.append(
            reason(
                NAME,
                f"reduced workers from {size.workers} to {workers} to fit the job's limits",
                {"workers_by_cpu": size.workers, "workers": workers},
                limits,
            )
        )
    return Proposal(roles=roles, reasons=reasons)


def _ps_memory_basis(size: _Size, ps_count: int) -> str:
    share = size.ps_memory_total_mib / ps_count
    split = size.ps_split
    if split is not None and _ps_memory_need(size, ps_count) == split.need_at(ps_count):
        return (
            f"each PS's own {split.overhead_mib:.0f} MiB and the largest PS's share of the "
            f"{split.model_mib:.0f} MiB model, {split.share_at(ps_count):.2f} over {ps_count} "
            f"PS (shares {split.smallest_share:.2f}-{split.largest_share:.2f} of "
            f"{split.count} PS, by their growth): {split.need_at(ps_count):.0f} MiB"
        )
    if share >= size.ps_memory_floor_mib:
        return f"the tier's {size.ps_memory_total_mib:.0f} MiB over {ps_count} PS"
    return (
        f"the most one PS holds, with its share of the growth: {size.ps_memory_floor_mib:.0f} "
        f"MiB, above a share of the tier's {size.ps_memory_total_mib:.0f} MiB, as a PS's own "
        "part does not split"
    )


def _why_margin(chief_bound: bool, ps_bound: bool) -> str:
    if chief_bound:
        return ", CPU-bound"
    if ps_bound:
        return ", held back by busy PS"
    return ", neither it nor the PS CPU-bound; limit with the margin"


def _trainers(context: OptimizerContext) -> int:
    """Workers (chief included) training while the load was measured: the speed samples'
    median count, else 1 (the design's chief-only start)."""
    counts = sorted(s.workers for s in context.speed if s.workers > 0)
    return max(counts[len(counts) // 2], 1) if counts else 1


def _empty(plan: PlanView) -> bool:
    return not (plan.roles or plan.launch or plan.remove or plan.migrate)


def _trainer(context: OptimizerContext, has_chief: bool) -> NodeView | None:
    """The node that trains alone in the first minutes: the chief, else worker 0."""
    candidates = context.nodes_of(ROLE_CHIEF) if has_chief else context.nodes_of(ROLE_WORKER)
    return min(candidates, key=lambda n: n.index, default=None)


def _not_ready(
    context: OptimizerContext,
    trainer: NodeView | None,
    ps_nodes: list[NodeView],
    settings: EstimateSettings,
) -> Proposal | None:
    """A no-change answer naming what is missing, or None when the estimate can be made."""
    threshold = {"ready_after_s": settings.ready_after_s, "min_samples": settings.min_samples}
    trainer_samples = context.samples_of(trainer.name) if trainer else []
    short = [n.name for n in ps_nodes if len(context.samples_of(n.name)) < settings.min_samples]
    starts = [s.ts for s in trainer_samples[:1]] + [s.ts for s in context.speed[:1]]
    observed = (context.now - min(starts)).total_seconds() if starts else 0.0
    evidence = {
        "ready": False,
        "trainer": None if trainer is None else trainer.name,
        "trainer_samples": len(trainer_samples),
        "ps_nodes": len(ps_nodes),
        "ps_without_enough_samples": short,
        "observed_s": round(observed, 1),
    }
    if trainer is None or not ps_nodes:
        missing = "chief or worker" if trainer is None else "PS"
        return no_change(NAME, f"not ready: the job runs no {missing} yet", evidence, threshold)
    if len(trainer_samples) < settings.min_samples or short:
        return no_change(
            NAME,
            f"not ready: waiting for {settings.min_samples} usage samples of {trainer.name} "
            "and every PS",
            evidence,
            threshold,
        )
    return too_early(NAME, observed, settings.ready_after_s, evidence, threshold)


def _ps_memory_total(
    context: OptimizerContext, ps_mem_used: float, settings: EstimateSettings
) -> tuple[float, _PsMemoryFit | None, Reason]:
    """Total PS memory to provide, the fit when it grows (None: stable), and why: the
    current use, or the end-of-training use if it grows."""
    fit = _fit_ps_memory(context, settings)
    threshold = {"growth_threshold": settings.growth_threshold}
    if fit is None or fit.relative_growth < settings.growth_threshold or not fit.significant:
        growth = None if fit is None else round(fit.relative_growth, 4)
        return (
            ps_mem_used,
            None,
            reason(
                NAME,
                f"PS memory stable (relative growth {growth}): sizing for "
                f"{ps_mem_used:.0f} MiB in total",
                {"relative_growth": growth, "total_ps_memory_mib": round(ps_mem_used, 1)},
                threshold,
            ),
        )
    total_steps = context.job.total_steps
    evidence = {
        "relative_growth": round(fit.relative_growth, 4),
        "rate_mib_per_step": fit.rate_mib_per_step,
        "rate_stderr_mib_per_step": fit.rate_stderr,
        "total_steps": total_steps,
    }
    if not total_steps:
        pace = [s.steps_per_sec for s in context.speed[-3:]]
        ahead = (sum(pace) / len(pace) if pace else 0.0) * settings.growth_horizon_s
        at = max(fit.at(fit.last_step + ahead), ps_mem_used)
        return (
            at,
            fit,
            reason(
                NAME,
                f"PS memory grows {fit.relative_growth:.0%} ({fit.rate_mib_per_step:.4f} +- "
                f"{fit.rate_stderr:.4f} MiB/step) and total_steps is unknown: sizing for "
                f"{at:.0f} MiB in total, {settings.growth_horizon_s:.0f} s ahead "
                f"({ahead:.0f} steps); oom_risk follows after",
                evidence | {"total_ps_memory_ahead_mib": round(at, 1)},
                threshold | {"growth_horizon_s": settings.growth_horizon_s},
            ),
        )
    # The fitted line at the last step, one standard error up: the end of training.
    at_end = max(fit.at(total_steps), ps_mem_used)
    return (
        at_end,
        fit,
        reason(
            NAME,
            f"PS memory grows {fit.relative_growth:.0%} over the observed steps "
            f"({fit.rate_mib_per_step:.4f} +- {fit.rate_stderr:.4f} MiB/step): sizing for "
            f"{at_end:.0f} MiB in total at step {total_steps}, the end of training"
            + (f" ({at_end / ps_mem_used:.1f}x today's {ps_mem_used:.0f} MiB)" * bool(ps_mem_used)),
            evidence | {"total_ps_memory_at_end_mib": round(at_end, 1)},
            threshold,
        ),
    )


def _fit_ps_memory(context: OptimizerContext, settings: EstimateSettings) -> _PsMemoryFit | None:
    """Fit total PS memory against global step, reading each PS's memory at speed-sample times."""
    ps_series = {}
    for ps in context.nodes_of(ROLE_PS):
        samples = context.samples_of(ps.name)
        ps_series[ps.name] = (
            [seconds_since(context.now, s.ts) for s in samples],
            [s.memory_mib for s in samples],
        )
    start = max(times[0] for times, _ in ps_series.values())
    end = min(times[-1] for times, _ in ps_series.values())
    steps: list[float] = []
    per_ps: dict[str, list[float]] = {name: [] for name in ps_series}
    for speed in context.speed:
        t = seconds_since(context.now, speed.ts)
        if start <= t <= end:  # interpolate only, never extrapolate a PS's memory
            steps.append(float(speed.global_step))
            for name, (times, mems) in ps_series.items():
                per_ps[name].append(float(np.interp(t, times, mems)))
    if len(steps) < settings.min_growth_points:
        return None
    totals = [sum(values) for values in zip(*per_ps.values(), strict=True)]
    line = fit_line(steps, totals)
    if line is None:
        return None
    rate, intercept = line
    base = intercept + rate * min(steps)
    if base <= 0:
        return None
    x, y = np.asarray(steps), np.asarray(totals)
    residual = y - (intercept + rate * x)
    spread = float(((x - x.mean()) ** 2).sum())
    dof = len(steps) - 2
    stderr = float(np.sqrt((residual**2).sum() / dof / spread)) if dof > 0 and spread else 0.0
    growth = rate * (max(steps) - min(steps)) / base
    shares = {}
    for name, values in per_ps.items():
        own = fit_line(steps, values)
        shares[name] = min(max(own[0] / rate, 0.0), 1.0) if own is not None and rate > 0 else 0.0
    return _PsMemoryFit(rate, intercept, growth, stderr, max(steps), shares)
