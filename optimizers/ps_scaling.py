"""More parameter servers while training runs, when the PS tier as a whole is the bottleneck."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from functools import cached_property
from statistics import median, pstdev
from typing import ClassVar, NamedTuple

from pydantic import Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import (
    Changes,
    ContextInput,
    NodeChange,
    NodeView,
    OptimizerContext,
    PlanView,
    Proposal,
)
from brain.optimizing.roles import current_role, effective_roles, planned_totals, role_totals
from brain.optimizing.speed_fit import (
    MIN_SAMPLE_NOISE,
    Configuration,
    SpeedFit,
    SpeedPoint,
    fit,
)
from brain.optimizing.speed_points import SETTLE_S, STALL_SHARE, observe, stalled_since
from optimizers._common import (
    PsChangeSettings,
    ceil_mib,
    ceil_to,
    floor_to,
    mean,
    no_change,
    over_limits,
    ps_changed_recently,
    reason,
)
from optimizers._ps_cost import cost_growing, cost_ratios
from optimizers._ps_knee import KNEE_COST_SHARE, past_knee

NAME = "ps_scaling"
# Evidence keys: a take-back of added PS: the count it went back to; the PS's CPU before
# a network-bound addition resized them.
TAKEN_BACK_TO = "taken_back_to"
PS_CPU_BEFORE = "ps_cpu_before"
# Evidence keys: a shrink's PS count and CPU before it; a take-back of a shrink.
SHRUNK_FROM = "shrunk_from"
SHRINK_UNDONE = "shrink_undone"
# Evidence keys: a trade's configuration before it (PS count and CPU, workers and their
# CPU); a take-back of a trade.
TRADED_FROM = "traded_from"
TRADE_UNDONE = "trade_undone"
# Evidence key: PS added while the trainers kept their pace, to make room for more workers
# (not to raise the speed at today's trainers).
ROOM_FOR_WORKERS = "room_for_workers"
# Evidence key: the PS tier's core-seconds per global step at its most efficient so far.
# The sample window is short, and the light load before the estimate (one trainer) is
# often the only time the PS ran below their knee; every round carries it on.
LEAST_COST = "ps_cpu_per_step_least"
# How long a least cost per step counts: a model's load per step may grow.
KNEE_MEMORY_S = 1800.0
# Key of TRADED_FROM: the trade counted on the least cost per step (a knee).
KNEE = "knee"
# A trade's PS all get the role's size where the busiest one would serve no more than
# this times their average load. Past it (a hot part that stays on one PS), the role's
# size is the other PS's and the busiest keeps a size of its own: all of its size would
# buy cores the other PS leave idle, which the workers need.
TRADE_MAX_SPREAD = 1.5
# A PS whose mean CPU use is at least this share of its request is pinned there: it serves
# no more than today, so the trainers' unused CPU beside it is a wait on it.
PINNED_BUSY = 0.95


class PsScalingSettings(PsChangeSettings):
    saturation: float = Field(
        0.8,
        ge=0.1,
        le=1.0,
        description="Mean CPU used / requested over every PS at or above which the PS tier "
        "is saturated.",
    )
    samples: int = Field(
        8,
        ge=1,
        le=100,
        description="Recent samples per PS and per worker judged (2 minutes at a 15 s scrape).",
    )
    relative_factor: float = Field(
        1.5,
        ge=1.0,
        le=10.0,
        description="A PS whose utilization is this times the median of the others' is hot "
        "on its own (hot_ps moves it): the tier is then not uniformly saturated.",
    )
    worker_wait: float = Field(
        0.7,
        ge=0.05,
        le=1.0,
        description="Mean CPU used / requested of the workers (and chief) at or below which "
        "they are waiting on the PS (above it, only where their unused CPU says more PS, up "
        "to network_explore_factor x today's, gain network_min_gain and the curves fitted to "
        "the job's speeds agree, or cannot tell before the job ran two PS counts beside the "
        "same trainers).",
    )
    speed_samples: int = Field(
        6, ge=2, le=1000, description="Speed samples at the current worker count needed."
    )
    stall_gain: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="Speed stalls when the mean of the newer half of those samples is less "
        "than this above the older half's (still rising: wait).",
    )
    target_utilization: float = Field(
        0.6, ge=0.1, le=1.0, description="PS CPU utilization the new PS count is sized for."
    )
    step: int = Field(2, ge=1, le=16, description="Most PS added by one plan.")
    network_factor: float = Field(
        4.0,
        ge=1.0,
        le=16.0,
        description="When the trainers wait while the PS tier's CPU is not saturated, the "
        "wait is the exchange with the PS (the network): one plan multiplies the PS count by "
        "at most this, each PS sized for its share of the load.",
    )
    resize_min_factor: float = Field(
        1.25,
        ge=1.0,
        le=16.0,
        description="PS added to a saturated tier whose step holds their count below the "
        "demand get a larger size only when it is at least this times the request: a new "
        "size relaunches every PS.",
    )
    network_min_gain: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="A network-bound tier grows to a PS count predicted to gain at least this "
        "much speed, and on while each further PS is predicted to gain it too "
        "(network_step_gain where every curve fitted to the job's speeds has the growth gain "
        "this).",
    )
    network_explore_factor: float = Field(
        1.5,
        ge=1.0,
        le=16.0,
        description="Where the curves fitted to the job's speeds cannot tell yet what more PS "
        "gain, a network-bound tier grows to the fewest PS the trainers' wait predicts to gain "
        "network_min_gain, when that is at most this times today's count (or one more): a "
        "step the speed can tell from the noise, judged before the next. Trainers that look "
        "busy (over worker_wait) wait on the PS only if their unused CPU gains "
        "network_min_gain over that many PS.",
    )
    network_step_gain: float = Field(
        0.02,
        ge=0.0,
        le=1.0,
        description="Where every curve fitted to the job's speeds has more PS gain "
        "network_min_gain, the count grows in one plan while each further PS is predicted, "
        "on the least hopeful of them, to gain at least this: the exchange shortens by less "
        "with each PS, and climbing one PS per judged plan stops short.",
    )
    reverse_after_s: float = Field(
        600,
        ge=0,
        le=7 * 86400,
        description="No PS added within this many seconds of an applied plan that cut the "
        "PS count (an estimate that found fewer enough): adding them back so soon reverses "
        "it, two restarts for nothing. worker_tuning's cooldown_s is the same window.",
    )
    shrink_below: float = Field(
        0.4,
        ge=0.0,
        le=1.0,
        description="Mean CPU used / requested over every PS below which the tier is "
        "over-provisioned: fewer PS (or, when no fewer would or they free less than "
        "min_freed_share, fewer cores each) run its load at "
        "target_utilization, the busiest PS at most max_busy; never while the trainers wait "
        "(at or below worker_wait: PS CPU does not show what a network-bound tier needs). "
        "A shrink after which the speed at the same trainers fell is taken back, and the "
        "tier is not shrunk again. 0: never shrink.",
    )
    trim_below: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="Mean CPU used / requested over every PS below which, though above "
        "shrink_below, each PS gets fewer cores: the busiest PS's use at trim_to, when that "
        "frees min_freed_share of the job's cores and no count changed for trim_after_s nor "
        "were the workers more within shrink_after_s (their load comes back with them). The "
        "cores go to the workers. Judged like a shrink. 0: never trim.",
    )
    trim_to: float = Field(
        0.75,
        ge=0.1,
        le=1.0,
        description="CPU used / requested the busiest PS is trimmed to (at most max_busy).",
    )
    trim_after_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="A tier is trimmed, or an over-provisioned one given fewer cores for "
        "each PS before shrink_after_s, only when no applied plan changed a count for this "
        "long (by default as long as worker_tuning's cooldown_s).",
    )
    max_busy: float = Field(
        0.85,
        ge=0.1,
        le=1.0,
        description="Headroom kept when the tier shrinks: the busiest PS's projected CPU used "
        "/ requested stays at or below this.",
    )
    memory_margin: float = Field(
        1.25,
        ge=1.0,
        le=4.0,
        description="When fewer PS take over the shards of the removed ones, each gets the "
        "tier's memory request shared among fewer (what the estimate sized for the growth), "
        "or its peak memory x (PS before / PS after) x this if more.",
    )
    min_freed_share: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="A shrink relaunches PS, which stalls training for a while: it must free "
        "at least this share of the cores the job requests.",
    )
    shrink_after_s: float = Field(
        1200,
        ge=0,
        le=86400,
        description="The tier gets fewer PS only when no applied plan changed a count (PS, "
        "workers) for this long: the estimate's PS were sized for the workers still to come, "
        "and a count reversed soon after is an oscillation. From trim_after_s on, when the "
        "job ran no more workers within this window than now, each PS gets fewer cores "
        "instead (a size is undone more cheaply than a count).",
    )
    cpu_step: float = Field(
        0.1, ge=0.01, le=4.0, description="CPU granularity in cores of a shrunk PS."
    )
    judge_after_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="PS that ps_scaling added are judged this long after they were applied: "
        "when the speed did not rise by min_gain over the speed at the same trainers just "
        "before them, they go again, and the tier is not grown past that count again.",
    )
    min_gain: float = Field(
        0.02,
        ge=0.0,
        le=1.0,
        description="Relative speed gain added PS must bring (two standard errors of the "
        "measured difference when more).",
    )
    trade_min_gain: float = Field(
        0.1,
        ge=0.0,
        le=4.0,
        description="A PS that holds the speed and cannot grow (the CPU limit leaves no room, "
        "or it was moved to a larger size and is still busy) is relieved by a trade: more, "
        "smaller PS and, when they do not fit beside the workers, fewer workers, in one plan; "
        "made when it is predicted to gain at least this much speed.",
    )
    paced_trade_min_gain: float = Field(
        0.2,
        ge=0.0,
        le=4.0,
        description="The gain a trade must be predicted to bring when the trainers keep their "
        "pace (use over worker_wait of their CPU) beside a saturated tier under a full limit. "
        "Higher than trade_min_gain: the prediction takes their unused CPU for a wait on the "
        "PS, where it may only be a worker sized above its use.",
    )
    pinned_trade_min_gain: float = Field(
        0.05,
        ge=0.0,
        le=4.0,
        description="The gain a trade that gives up no worker must be predicted to bring "
        "beside trainers that keep their pace, when the busiest PS is pinned at its request "
        "(0.95 of it in use or more): more, smaller PS over the tier's cores and the room "
        "the CPU limit leaves, which one more PS of today's size does not fit. The trainers' "
        "unused CPU is then a wait on that PS, not a size above their use. Not against a PS "
        "load that grows per step, nor where the busiest PS keeps a size of its own.",
    )
    ps_port: int = Field(
        2222, ge=1, le=65535, description="Port of the PS services in `ps_hosts` (DLRover: 2222)."
    )


class PsScalingOptimizer:
    """Adds PS when the PS tier as a whole is saturated: the workers wait on it, or it
    holds back more workers while the limits have room.

    Judged on the last ``samples`` samples of every PS and every trainer (workers and
    chief): the PS's mean CPU utilization is at least ``saturation``, no PS is hot on its
    own (``relative_factor`` x the others' median: hot_ps's case), and the speed at the
    current worker count has stalled (its newer half less than ``stall_gain`` above its
    older half). When the trainers use at most ``worker_wait`` of their CPU they wait on
    the PS: the PS demand with workers at full pace is ``PS CPU used / trainer
    utilization``, and the new count runs it at ``target_utilization`` of the PS request.
    Otherwise the tier is too busy for worker_tuning to add workers: the new count runs
    today's PS load at ``target_utilization``, as many PS as the job's limits leave room
    for. Either way at least one more PS and at most ``step`` more. The plan carries
    ``ps_hosts``, the tier's service addresses after the change. No change within the PS
    tier's cooldown, ``ps_change_interval_s``, nor within ``reverse_after_s`` of a plan
    that cut the PS count (adding PS back so soon would reverse it).

    Both directions: PS it added that did not raise the speed over the speed just before
    them by ``min_gain`` (judged ``judge_after_s`` later) go again, and the tier does not grow
    past that count again (not PS added to make room for more workers, which were not to
    raise it); a tier below ``shrink_below`` with no count changed for
    ``shrink_after_s`` (``trim_after_s``: fewer cores only) gets fewer PS (when no fewer
    would do, or they free too little, fewer cores each) for its load at
    ``target_utilization``, the busiest at most ``max_busy``, when that frees
    ``min_freed_share`` of the job's cores. A tier between ``shrink_below`` and
    ``trim_below`` whose workers the CPU limit keeps from growing is trimmed: each PS gets
    the busiest one's use at ``trim_to``, the rest for the workers.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ROLE_PS}), nodes=frozenset({ROLE_PS}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 20}
    Settings: ClassVar[type[PsScalingSettings]] = PsScalingSettings

    def propose(self, context: OptimizerContext, settings: PsScalingSettings) -> Proposal:
        proposal = self._round(context, settings)
        least = _least_cost_per_step(context, _window_cost(cost_ratios(context)))
        if least is None:
            return proposal
        # Every reason of this round carries the tier's least cost per step on.
        carried = {
            "ps_cpu_per_step": round(least.ps_cpu_per_step, 6),
            "seen_at": least.seen_at.isoformat(),
        }
        proposal.reasons = [
            replace(r, evidence=r.evidence | {LEAST_COST: carried}) if r.optimizer == NAME else r
            for r in proposal.reasons
        ]
        return proposal

    def _round(self, context: OptimizerContext, settings: PsScalingSettings) -> Proposal:
        """The round's proposal, before it carries the least cost per step on."""
        ps_nodes = sorted(
            (n for n in context.nodes_of(ROLE_PS) if n.cpu > 0), key=lambda n: n.index
        )
        if not ps_nodes:
            return no_change(NAME, "the job has no PS with a CPU request")
        interval = ps_changed_recently(NAME, context, settings.ps_change_interval_s)
        if interval is not None:
            return interval
        cut = _count_cut_recently(context, settings.reverse_after_s)
        if cut is not None:
            return cut
        threshold = settings.model_dump(
            exclude={
                "ps_port",
                "ps_change_interval_s",
                "reverse_after_s",
                "memory_margin",
                "cpu_step",
            }
        )
        trainers = [n for n in context.nodes if n.role in (ROLE_WORKER, ROLE_CHIEF) and n.cpu > 0]
        recent = {
            n.name: context.samples_of(n.name)[-settings.samples :] for n in ps_nodes + trainers
        }
        short = sorted(name for name, samples in recent.items() if len(samples) < settings.samples)
        if short or not trainers:
            return no_change(
                NAME,
                f"waiting for {settings.samples} samples of every PS and trainer",
                {"nodes_without_enough_samples": short},
                threshold,
            )
        traded = _trade_did_not_help(context, ps_nodes, trainers, recent, settings)
        if traded is not None:
            return traded
        no_help = _did_not_help(context, ps_nodes, settings)
        if no_help is not None:
            return no_help
        hurt = _shrink_hurt(context, ps_nodes, settings)
        if hurt is not None:
            return hurt
        ps_use = _mean_use(ps_nodes, recent)
        ps_util = {n.name: ps_use[n.name] / n.cpu for n in ps_nodes}
        tier_util = mean(list(ps_util.values()))
        trainer_util = _trainer_utilization(trainers, recent)
        evidence = {
            "ps_utilization": {k: round(v, 3) for k, v in ps_util.items()},
            "ps_tier_utilization": round(tier_util, 3),
            "trainer_utilization": round(trainer_util, 3),
        }
        paused = _paused(context, recent)
        if paused is not None:
            return paused
        if trainer_util > settings.worker_wait and not _shrink_undone(context):
            smaller = _smaller_tier(
                context, ps_nodes, recent, tier_util, evidence, threshold, settings
            )
            if smaller is not None:
                return smaller
        # Trainers that keep their pace may still wait on the exchange; an over-provisioned
        # tier is the shrink's, a busy PS the rules below's.
        # The job's fit, worked out at most once this round (both rules below read it).
        job_fit = _JobFit(context)
        busy_wait = (
            _busy_trainers_wait(context, job_fit, trainer_util, len(ps_nodes), settings)
            if trainer_util > settings.worker_wait
            and tier_util >= settings.shrink_below
            and not _saturated(ps_util, tier_util, settings)
            else None
        )
        if tier_util < settings.saturation and (
            trainer_util <= settings.worker_wait or busy_wait is not None
        ):
            return _network_bound(
                context,
                job_fit,
                ps_nodes,
                recent,
                trainer_util,
                busy_wait,
                evidence,
                threshold,
                settings,
            )
        if not _saturated(ps_util, tier_util, settings):
            return no_change(
                NAME,
                f"PS tier at {tier_util:.0%} CPU, below {settings.saturation:.0%}: not saturated",
                evidence,
                threshold,
            )
        hot = _hot_alone(ps_util, settings.relative_factor)
        if hot is not None:
            traded = _relieve_hot(context, ps_nodes, recent, hot, trainer_util, evidence, settings)
            if traded is not None:
                return traded
            return no_change(
                NAME,
                f"{hot} is hot relative to the other PS: moving it (hot_ps) helps, not more PS",
                evidence,
                threshold,
            )
        stall = _stall(context, settings)
        if isinstance(stall, Proposal):
            return stall
        evidence |= stall
        if trainer_util > settings.worker_wait:
            # The trainers keep their pace, but a tier this busy stops worker_tuning (its
            # ps_cpu_threshold), or will once more workers load it: while the limits have
            # room, PS for the load of today at the target utilization make room for them.
            return _make_room(
                context, ps_nodes, recent, trainer_util, evidence, threshold, settings
            )
        return _add_ps(context, ps_nodes, recent, trainer_util, evidence, threshold, settings)


def _applied_counts(context: OptimizerContext, role: str) -> list[tuple]:
    """``(applied_at, plan id, count)`` of every applied plan that set ``role``'s count,
    oldest first."""
    return sorted(
        (p.applied_at, p.id, p.roles[role].count)
        for p in context.plans
        if p.status == PlanStatus.applied
        and p.applied_at is not None
        and p.roles.get(role) is not None
        and p.roles[role].count is not None
    )


def _workers_grown_recently(context: OptimizerContext, window_s: float) -> tuple[int, float] | None:
    """The newest applied plan that raised the worker count above the applied plan before
    it, with its age, when younger than ``window_s``: PS that exceed the limits make the
    guard cut workers, and cutting those so soon reverses them (an oscillation)."""
    counted = _applied_counts(context, ROLE_WORKER)
    if len(counted) < 2:
        return None
    (applied_at, plan_id, after), before = counted[-1], counted[-2][2]
    elapsed = (context.now - applied_at).total_seconds()
    if after <= before or elapsed >= window_s:
        return None
    return plan_id, elapsed


def _workers_fewer_than_lately(context: OptimizerContext, window_s: float) -> bool:
    """Whether the job ran more workers within ``window_s`` than it runs now (a cut that
    may come back, as after a cluster shortage: the PS load of those workers with it)."""
    counted = _applied_counts(context, ROLE_WORKER)
    since = context.now - timedelta(seconds=window_s)
    lately = [count for at, _, count in counted if at >= since]
    before = [count for at, _, count in counted if at < since]
    now = current_role(ROLE_WORKER, context.job, context.nodes).count or 0
    return max(lately + before[-1:], default=0) > now


def _count_cut_recently(context: OptimizerContext, window_s: float) -> Proposal | None:
    """No change while the newest applied plan that set the PS count cut it (below the
    count the applied plan before it set) less than ``window_s`` ago."""
    counted = _applied_counts(context, ROLE_PS)
    if len(counted) < 2:
        return None
    (applied_at, plan_id, after), before = counted[-1], counted[-2][2]
    elapsed = (context.now - applied_at).total_seconds()
    if after >= before or elapsed >= window_s:
        return None
    return no_change(
        NAME,
        f"plan {plan_id} cut the PS from {before} to {after} {elapsed:.0f} s ago: no PS added "
        f"back within {window_s:.0f} s",
        {"plan": plan_id, "ps_before": before, "ps_after": after, "seconds_since": elapsed},
        {"reverse_after_s": window_s},
    )


def _add_ps(context, ps_nodes, recent, trainer_util, evidence, threshold, settings) -> Proposal:
    now = len(ps_nodes)
    request = _ps_request(context, ps_nodes)
    used = sum(_mean_use(ps_nodes, recent).values())
    # The PS serve the trainers' current pace; at full pace they would need this much.
    demand = used / max(trainer_util, 0.05)
    wanted = math.ceil(demand / (request * settings.target_utilization) - 1e-9)
    count = min(max(wanted, now + 1), now + settings.step)
    ceiling = _ceiling(context)
    if ceiling is not None and count > ceiling:
        return _no_more_help(now, ceiling, evidence, threshold)
    # As many of the wanted PS as fit the limits: the guard would cut the workers for
    # the rest, whatever the PS then serve.
    while count > now + 1 and _over_limits(context, {ROLE_PS: RoleSpec(count=count)}):
        count -= 1
    grown = _workers_grown_recently(context, settings.reverse_after_s)
    if grown is not None and _over_limits(context, {ROLE_PS: RoleSpec(count=count)}):
        plan_id, elapsed = grown
        return no_change(
            NAME,
            f"PS {now} -> {count} would exceed the job's limits, and the guard would cut the "
            f"workers plan {plan_id} added {elapsed:.0f} s ago: not within "
            f"{settings.reverse_after_s:.0f} s",
            evidence | {"plan": plan_id, "seconds_since": round(elapsed)},
            threshold | {"reverse_after_s": settings.reverse_after_s},
        )
    if _over_limits(context, {ROLE_PS: RoleSpec(count=count)}):
        # Not even one more fits: trade workers for smaller PS instead, or nothing.
        traded = _trade(context, ps_nodes, recent, trainer_util, evidence, settings)
        if traded is not None:
            return traded
        return no_change(
            NAME,
            f"PS {now} -> {count} of {request:g} cores would exceed the job's limits, and no "
            f"trade of workers for more, smaller PS is predicted to gain "
            f"{settings.trade_min_gain:.0%}",
            evidence,
            threshold | {"trade_min_gain": settings.trade_min_gain},
        )
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(used, 3),
        "ps_cpu_demand": round(demand, 3),
        "ps_cpu_request": request,
    }
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    role, larger = RoleSpec(count=count), ""
    cpu = None
    if wanted > count:
        cpu = _larger_ps(context, ps_nodes, count, demand, request, settings)
    if cpu is not None:
        role = _resized(context, ps_nodes, count, cpu)
        evidence["ps_cpu"] = cpu
        larger = (
            f"; {wanted} PS of {request:g} cores would take {wanted - now} more, so each of "
            f"the {count} gets its share, {demand:.2f} / {count} / "
            f"{settings.target_utilization:g} -> {cpu:g} cores (as far as the limits allow)"
        )
    return Proposal(
        roles={ROLE_PS: role},
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"PS tier at {evidence['ps_tier_utilization']:.0%} CPU while the trainers use "
                f"{trainer_util:.0%} of theirs and speed stalled "
                f"({evidence['speed_change']:+.1%}): PS demand at full pace "
                f"{used:.2f} / {trainer_util:.2f} = {demand:.2f} cores, at "
                f"{settings.target_utilization:.0%} of {request:g} cores each -> PS {now} -> "
                f"{count} (at most +{settings.step}){larger}",
                evidence,
                threshold,
            )
        ],
    )


def _larger_ps(context, ps_nodes, count, demand, request, settings) -> float | None:
    """The cores each of ``count`` PS gets when that count is fewer than the demand needs
    at the request (the step holds it): each its share of the demand at
    ``target_utilization``, at most the largest node, cut to what the job's limits hold.
    None when that is less than ``resize_min_factor`` times the request (a new role size
    relaunches every PS, and 2.5 -> 2.6 cores cost a growing-load job its last PS step),
    or when a PS already runs above it. A job asking 1-core PS added 2 at a time for
    50 minutes, its tier pinned at 98 % throughout."""
    step = settings.cpu_step
    cpu = min(ceil_to(demand / (count * settings.target_utilization), step), context.node_max.cpu)
    while cpu > request + 1e-9 and _over_limits(
        context, {ROLE_PS: _resized(context, ps_nodes, count, cpu)}
    ):
        cpu = round(math.floor(cpu * 0.95 / step) * step, 6)
    if cpu < request * settings.resize_min_factor - 1e-9 or any(
        n.cpu > cpu + 1e-9 for n in ps_nodes
    ):
        return None
    return cpu


def _network_bound(
    context, job_fit, ps_nodes, recent, trainer_util, busy_wait, evidence, threshold, settings
) -> Proposal:
    """More PS, each sized for its share of the load, when the trainers wait while the PS
    tier's CPU is not saturated: the wait is the exchange with the PS, which more PS (not
    more PS CPU) shorten. The trainers compute ``trainer_util`` of a step and wait the
    rest; spread over ``k`` PS instead of ``now``, the wait takes ``now / k`` of its time,
    so the speed is predicted to grow ``1 / (busy + (1 - busy) now / k)``. The count
    goes to the fewest PS predicted to gain ``network_min_gain`` when that is at most
    ``network_explore_factor`` x today's (or one more), and on while each further PS is
    predicted to gain it too, to at most ``network_factor`` x today's; the PS then get
    ``load x predicted gain / k / target_utilization`` cores each (the busiest's share
    kept), never more than today's.

    The curves fitted to the job's measured speeds (``SpeedFit.ps_gains``, each added PS
    at today's cores per PS, or today's cores split for trainers that keep their pace)
    overrule that prediction where they agree: no PS when even the most hopeful of them
    gains less than ``network_min_gain`` at every count up to ``network_factor`` x today's
    (the trainers wait on each other or the serial part, not on the PS); when even the
    least hopeful gains it at some count, that curve predicts instead, and the count grows
    while each further PS gains ``network_step_gain`` on it, to no count that gains less
    than ``network_min_gain``. When no count sized so fits the job's CPU limit, the cores
    the limit leaves the tier are split over the most PS (of those counts) whose busiest
    stays within ``max_busy``; trainers that keep their pace (``_busy_trainers_wait``) give
    up no cores, and the PS split today's that way (``busy_wait`` says why such trainers
    wait).

    A PS hot relative to the others waits for ``hot_ps`` to move it, unless it was moved
    above the role's size already and such trainers keep their pace (no trade is made for
    them): it then keeps its cores, its part beyond an even share stays on it, so the
    speed is predicted to grow at most as its share of the traffic falls, the count grows
    only while each further PS gains ``network_step_gain``, and the other PS split the
    rest of today's cores, each within ``max_busy`` of the traffic it does not carry."""
    tier = f"PS tier at {evidence['ps_tier_utilization']:.0%} CPU"
    waiting = (
        f"{tier} while the trainers use {trainer_util:.0%} of theirs: they wait on the "
        "exchange with the PS, not on PS CPU"
        if busy_wait is None
        else f"{tier}; the trainers use {trainer_util:.0%} of theirs, but {busy_wait}"
    )
    utilization = evidence["ps_utilization"]
    hot = _hot_alone(utilization, settings.relative_factor)
    # A hot PS that hot_ps moved already and that is still hot (its cores past its knee
    # buy little) keeps its cores beside more PS, which take the rest of the traffic off
    # it, when the trainers keep their pace (no trade is made for them).
    kept = None
    if hot is not None and utilization[hot] >= settings.saturation:
        traded = _relieve_hot(context, ps_nodes, recent, hot, trainer_util, evidence, settings)
        if traded is not None:
            return traded
        kept = None if busy_wait is None else _moved(context, ps_nodes, hot)
        if kept is None:
            return no_change(
                NAME,
                f"{waiting}, but {hot} is at {utilization[hot]:.0%}, hot relative to the "
                "other PS: moving it (hot_ps) helps first",
                evidence,
                threshold,
            )
    added = _last_addition(context)
    if added is not None:
        age = (context.now - added[0].applied_at).total_seconds()
        if age < settings.judge_after_s and not _paid(context, settings):
            return no_change(
                NAME,
                f"{waiting}; PS added {age:.0f} s ago (plan {added[0].id}) are judged "
                f"{settings.judge_after_s:.0f} s after, unless the speed at the same trainers "
                "already rose beyond the noise: no more before",
                evidence,
                threshold,
            )
    stall = _stall(context, settings)
    if isinstance(stall, Proposal):
        return stall
    evidence = evidence | stall
    now = len(ps_nodes)
    request = _ps_request(context, ps_nodes)
    used = _mean_use(ps_nodes, recent)
    total = sum(used.values())
    skew = max(used.values()) / (total / now) if total > 0 else 1.0
    share = max(trainer_util, 0.05)

    def gain(count: int) -> float:
        return 1 / (share + (1 - share) * now / count)

    ceiling = _ceiling(context)
    if ceiling is not None and now + 1 > ceiling:
        return _no_more_help(now, ceiling, evidence, threshold)
    top = _network_top(now, ceiling, settings)
    counts_fit = job_fit.counts(split=busy_wait is not None)
    counts_fitted = {} if counts_fit is None else counts_fit.above(now, top)
    if counts_fitted:
        most = max(g[2] for g in counts_fitted.values())
        evidence = evidence | {
            "fitted_one_more_ps_gain": [round(g, 4) for g in counts_fitted[now + 1]]
        }
        if most < settings.network_min_gain:
            return no_change(
                NAME,
                f"{waiting}; but every curve that fits the job's speeds has up to {top} PS "
                f"gain at most {most:+.1%}, less than {settings.network_min_gain:.0%}: the "
                "wait is not on the PS (the trainers' own synchronisation, the serial part)",
                evidence,
                threshold | {"network_min_gain": settings.network_min_gain},
            )
    # Every plausible curve has some count up to top gain network_min_gain: the least
    # hopeful one predicts each count's speed, and the count grows while each further PS
    # gains network_step_gain on it; else the trainers' unused share predicts, from the
    # fewest PS it has gain network_min_gain (a step the speed tells from the noise).
    sure = any(g[0] >= settings.network_min_gain for g in counts_fitted.values())
    if sure:

        def gain(count: int) -> float:
            return 1 + counts_fitted[count][0]

        step_gain = settings.network_step_gain
    else:
        step_gain = settings.network_min_gain
        explore = _network_explore(now, top, settings)
        if gain(explore) - 1 < settings.network_min_gain:
            return no_change(
                NAME,
                f"{waiting}, a wait of {1 - share:.0%} of a step; "
                + (
                    "one more PS is"
                    if explore == now + 1
                    else f"{explore} PS ({settings.network_explore_factor:g} x today's) are"
                )
                + f" predicted to gain {gain(explore) - 1:+.1%}, less than "
                f"{settings.network_min_gain:.0%}",
                evidence,
                threshold
                | {
                    "network_min_gain": settings.network_min_gain,
                    "network_explore_factor": settings.network_explore_factor,
                },
            )
    if kept is not None:
        # The kept PS serves its hot part at any count: the speed grows at most as much as
        # its share of the traffic shrinks.
        kept_part = _hot_share(used, kept.name, None)
        uncapped = gain

        def kept_share(count: int) -> float:
            return kept_part + (1 - kept_part) / count

        def gain(count: int) -> float:
            return min(uncapped(count), kept_share(now) / kept_share(count))

        def others_load(count: int) -> float:
            """Each other PS's CPU use over ``count`` PS at the speed predicted there: the
            traffic the kept one does not carry, split over them."""
            rest = (1 - kept_share(count)) / (1 - kept_share(now))
            return (total - used[kept.name]) * rest * gain(count) / (count - 1)

    # The count grows while each further PS gains step_gain, and, but beside a kept PS,
    # on to the fewest that gain network_min_gain: its part caps every count's gain, so
    # reaching for it there would add many PS for little.
    wanted = now + 1
    while wanted < top and (
        (kept is None and gain(wanted) - 1 < settings.network_min_gain)
        or gain(wanted + 1) / gain(wanted) - 1 >= step_gain
    ):
        wanted += 1
    if kept is not None and gain(wanted) - 1 < settings.network_min_gain:
        return no_change(
            NAME,
            f"{waiting}, but {kept.name}, moved already, keeps its {kept_part:.0%} of the "
            f"traffic beyond an even share however many PS: {wanted} PS would gain "
            f"{gain(wanted) - 1:+.1%}, less than {settings.network_min_gain:.0%}, and each "
            f"further one less than {step_gain:.0%}",
            evidence,
            threshold | {"network_min_gain": settings.network_min_gain},
        )

    def load(count: int) -> float:
        """The busiest PS's CPU use over ``count`` PS at the speed predicted there."""
        return total * skew * gain(count) / count

    def roles_at(count: int, cpu: float, moved_cpu: float = 0.0) -> dict[str, RoleSpec] | None:
        """The PS role at ``count`` PS of ``cpu`` cores, None when over the limits (with a
        PS moved to ``moved_cpu`` more)."""
        roles = {ROLE_PS: _resized(context, ps_nodes, count, None if cpu == request else cpu)}
        return None if _over_limits(context, roles, moved_cpu) else roles

    def split(count: int) -> float:
        """Each PS's cores when the tier's cores now (or the room the CPU limit leaves
        it) are split over ``count`` PS."""
        room = _ps_room(context, count, settings.cpu_step)
        if busy_wait is not None:
            today = sum(n.cpu for n in ps_nodes) / count
            room = min(room, floor_to(today, settings.cpu_step))
        return round(min(room, request), 6)

    # Fewer PS than wanted where more do not fit, but none that gains too little to be
    # told from the noise (the fit's least hopeful curve can reach the least gain only
    # further up).
    counts = [k for k in range(wanted, now, -1) if gain(k) - 1 >= settings.network_min_gain]
    hot_node = kept or max(ps_nodes, key=lambda n: used[n.name])
    hot = _hot_share(used, hot_node.name, None)

    def sized(load: float) -> float:
        cpu = ceil_to(load / settings.target_utilization, settings.cpu_step)
        return min(max(cpu, 0.1), request)

    # Trainers that keep their pace get no fewer cores for more PS: these split today's.
    # Past TRADE_MAX_SPREAD, the role gets the other PS's share and the busiest keeps its
    # cores of today, as in a trade (its use may be its knee's: no share of the tier's
    # use tells what it needs).
    hot_cpu = None
    for count in counts if busy_wait is None else ():
        busiest_share = hot + (1 - hot) / count
        if count * busiest_share > TRADE_MAX_SPREAD:
            cpu = sized(total * (1 - hot) / count * gain(count))
            hot_cpu = max(cpu, hot_node.cpu)
            roles = roles_at(count, cpu, hot_cpu - cpu)
        else:
            cpu, hot_cpu = sized(load(count)), None
            roles = roles_at(count, cpu)
        if roles is not None:
            break
    else:
        hot_cpu = None
        # Sized for the target, no count fits beside the trainers: the cores the limit
        # leaves the tier split over more PS, the busiest within max_busy (more PS shorten
        # the exchange whatever their size). A kept PS keeps its cores, and the others
        # split the rest of today's.
        for count in counts:
            if kept is None:
                cpu, busiest, moved_cpu = split(count), load(count), 0.0
            else:
                cpu = _split_beside(context, ps_nodes, kept, count, request, settings.cpu_step)
                busiest, moved_cpu = others_load(count), kept.cpu - cpu
            if cpu < settings.cpu_step or busiest > cpu * settings.max_busy:
                continue
            roles = roles_at(count, cpu, moved_cpu)
            if roles is not None:
                hot_cpu = None if kept is None else kept.cpu
                break
        else:
            return no_change(
                NAME, f"{waiting}; one more PS would exceed the job's limits", evidence, threshold
            )
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(total, 3),
        "ps_cpu_request": request,
        "predicted_speed_gain": round(gain(count) - 1, 4),
    }
    if cpu != request:
        evidence[PS_CPU_BEFORE] = request
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    sizes = f"PS {now} -> {count}" + (
        f", {request:g} -> {cpu:g} cores each" if cpu != request else ""
    )
    migrate = []
    if hot_cpu is not None and hot_cpu > cpu:
        migrate = [_own_size(roles, hot_node, hot_cpu)]
        evidence["hot_ps"] = {"node": hot_node.name, "cpu": hot_cpu}
        sizes += (
            f"; {hot_node.name}, the busiest ({hot:.0%} of the load stays on it), {hot_cpu:g} cores"
        )
    return Proposal(
        roles=roles,
        migrate=migrate,
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"{waiting}. Over {count} PS instead of {now} the wait ({1 - share:.0%} of a "
                f"step) takes {now}/{count} of its time: predicted {gain(count) - 1:+.0%} speed "
                f"(one more PS would gain less than {step_gain:.0%}, or "
                f"{settings.network_factor:g} x the PS at most); each PS sized for its share "
                f"of {total:.2f} cores of load x {gain(count):.2f} at "
                f"{settings.target_utilization:.0%}: {sizes}"
                f"{_fitted(counts_fitted.get(count), count, sure)}",
                evidence,
                threshold | {"network_factor": settings.network_factor},
            )
        ],
    )


def _busy_trainers_wait(
    context: OptimizerContext,
    job_fit: _JobFit,
    trainer_util: float,
    now: int,
    settings: PsScalingSettings,
) -> str | None:
    """Why the trainers may wait on the exchange with the PS although they use more than
    ``worker_wait`` of their CPU (workers sized to their use look busy while they wait),
    or None. The share of their CPU they leave unused, spread over
    ``network_explore_factor`` x today's PS (at least one more), must gain
    ``network_min_gain`` (one more PS beside many gains little however long the wait), and
    the curves fitted to the job's speeds must agree (today's PS cores split over more PS,
    up to ``_network_top``): every plausible one gains it at some count, or, while the job
    never ran another PS count beside the same trainers (no curve can tell the PS's links
    from the rest of the wait), the most hopeful one does: more PS, judged like any
    addition, tell. Either alone is too little: a fit of few points, or trainers sized
    above their use."""
    top = _network_top(now, _ceiling(context), settings)
    if top <= now:
        return None
    explore = _network_explore(now, top, settings)
    if 1 / (trainer_util + (1 - trainer_util) * now / explore) - 1 < settings.network_min_gain:
        return None
    counts_fit = job_fit.counts(split=True)
    if counts_fit is None:
        return None
    fitted = counts_fit.above(now, top).values()
    if max(g[2] for g in fitted) < settings.network_min_gain:
        return None
    if max(g[0] for g in fitted) >= settings.network_min_gain:
        return "every curve fitted to the job's speeds has more PS shorten the exchange"
    if not _ps_count_varied_alone(counts_fit.fitted.points):
        return (
            "the job never ran another PS count beside the same trainers, and the most "
            "hopeful curve fitted to its speeds has more PS shorten the exchange: more PS "
            "tell"
        )
    return None


def _ps_count_varied_alone(points) -> bool:
    """Whether two measured configurations differ in their PS count alone (the same
    trainers of the same size): only such a pair tells the PS's links from the rest."""
    seen: dict[tuple[int, float], set[int]] = {}
    for point in points:
        c = point.configuration
        seen.setdefault((c.trainers, c.trainer_cpu), set()).add(c.ps_count)
    return any(len(counts) > 1 for counts in seen.values())


def _moved(context, ps_nodes: list[NodeView], name: str) -> NodeView | None:
    """The PS ``name`` when it runs above the role's CPU (hot_ps moved it), else None."""
    node = next(n for n in ps_nodes if n.name == name)
    role_cpu = current_role(ROLE_PS, context.job, context.nodes).cpu or node.cpu
    return node if node.cpu > role_cpu + 1e-9 else None


def _split_beside(context, ps_nodes, kept: NodeView, count: int, request: float, step: float):
    """Each of ``count`` - 1 PS's cores beside ``kept``, which keeps its own: today's
    other cores split over them, at most what the CPU limit leaves and the role's request."""
    today = floor_to((sum(n.cpu for n in ps_nodes) - kept.cpu) / (count - 1), step)
    room = _ps_room(context, count - 1, step, reserved=kept.cpu)
    return round(min(today, room, request), 6)


def _ps_room(context, count: int, step: float, reserved: float = 0.0) -> float:
    """The cores each of ``count`` PS may have beside the other roles (and ``reserved``
    cores, a PS kept at its own size) within the job's CPU limit, a multiple of ``step``
    (infinite without a limit)."""
    limit = context.job.limits.cpu
    if limit is None:
        return math.inf
    others = planned_totals({ROLE_PS: RoleSpec(count=0)}, context.job, context.nodes).cpu
    return floor_to((limit - others - reserved) / count, step)


def _ps_request(context, ps_nodes: list[NodeView]) -> float:
    """The PS role's CPU request (the first PS's where the role has none)."""
    return current_role(ROLE_PS, context.job, context.nodes).cpu or ps_nodes[0].cpu


def _mean_use(nodes: list[NodeView], recent: dict) -> dict[str, float]:
    """Each node's mean CPU use over its recent samples."""
    return {n.name: mean([s.cpu for s in recent[n.name]]) for n in nodes}


def _trainer_utilization(trainers: list[NodeView], recent: dict) -> float:
    """The trainers' mean CPU used / requested over their recent samples."""
    use = _mean_use(trainers, recent)
    return mean([use[n.name] / n.cpu for n in trainers])


def _fitted(gains: tuple[float, float, float] | None, count: int, sure: bool) -> str:
    """What the fitted curves say of ``count`` PS, for a reason's message."""
    if gains is None:
        return ""
    agree = ", the least of them chose the count" if sure else ""
    return (
        f". The curves fitted to the job's speeds give {count} PS "
        f"{gains[0]:+.1%} to {gains[2]:+.1%}{agree}"
    )


def _network_top(now: int, ceiling: int | None, settings: PsScalingSettings) -> int:
    """The most PS one network-bound plan may grow ``now`` to: ``network_factor`` x
    today's, at most ``ceiling``, the count a take-back left (``_ceiling``)."""
    top = math.floor(now * settings.network_factor + 1e-9)
    return top if ceiling is None else min(top, ceiling)


def _network_explore(now: int, top: int, settings: PsScalingSettings) -> int:
    """The most PS the trainers' wait alone may reach for (the fitted curves cannot tell
    yet): ``network_explore_factor`` x today's, at least one more, at most ``top``."""
    return max(now + 1, min(top, math.floor(now * settings.network_explore_factor + 1e-9)))


class _PsCountFit(NamedTuple):
    """The curves fitted to the job's measured speeds, at the configuration it runs."""

    fitted: SpeedFit
    now: Configuration
    # Today's PS cores split over more PS (trainers that keep their pace give up no
    # cores), else each PS at today's mean cores (added PS come at up to the request).
    split: bool

    def gains(self, count: int) -> tuple[float, float, float]:
        """What ``count`` PS gain by the plausible curves: (least, best curve's, most)."""
        now = self.now
        cores = now.ps_cpu if self.split else now.ps_cpu / now.ps_count * count
        return self.fitted.ps_gains(now, count, cores)

    def above(self, now: int, top: int) -> dict[int, tuple[float, float, float]]:
        """The gains of each count from ``now`` + 1 PS to ``top``."""
        return {count: self.gains(count) for count in range(now + 1, top + 1)}


class _JobFit:
    """The curves fitted to the job's measured speeds at the configuration it runs,
    worked out when first asked for."""

    def __init__(self, context: OptimizerContext):
        self._context = context

    @cached_property
    def _at_now(self) -> tuple[SpeedFit, Configuration] | None:
        observed = observe(self._context, SETTLE_S, STALL_SHARE)
        now = observed.current
        speed_fit = None if now is None else fit(observed.points)
        if speed_fit is None or now.ps_count <= 0:
            return None
        return speed_fit, now

    def counts(self, split: bool) -> _PsCountFit | None:
        """The fit read for PS counts (None before a speed was measured at the current
        configuration, or without PS)."""
        return None if self._at_now is None else _PsCountFit(*self._at_now, split)


def _resized(context, ps_nodes, count: int | None, cpu: float | None) -> RoleSpec:
    """The PS role at ``count`` PS (None: today's) of ``cpu`` cores. A new CPU relaunches
    every PS at the role's size, so the role also takes the most memory any PS has now
    (an OOM fix may have raised one PS's alone): none loses what it needed."""
    if cpu is None:
        return RoleSpec(count=count)
    role = current_role(ROLE_PS, context.job, context.nodes).memory_mib or 0.0
    memory = max([role, *(n.memory_mib for n in ps_nodes)])
    return RoleSpec(count=count, cpu=cpu, memory_mib=None if memory == role else memory)


def _kept_memory(role: RoleSpec) -> str:
    """What a resize's reason says of the memory ``_resized`` raised the role to."""
    if role.memory_mib is None:
        return ""
    return f", each with {role.memory_mib:.0f} MiB (the most a PS has now)"


class _PsChangeSpeed(NamedTuple):
    now: Configuration
    after: SpeedPoint  # the current configuration's speed
    earlier: SpeedPoint  # the previous configuration's speed
    change: float  # relative speed change, after over earlier, minus 1
    noise: float  # the change that counts as more than noise


def _ps_change_speed(
    context: OptimizerContext, settings: PsScalingSettings
) -> _PsChangeSpeed | None:
    """The speed at the same trainers against the configuration before the current one,
    which had other PS cores; the noise is ``min_gain``, or two standard errors when more.
    None until both configurations have ``speed_samples`` samples (stalls and restarts
    left out)."""
    observed = observe(context, SETTLE_S, STALL_SHARE)
    now = observed.current
    previous = None if now is None else observed.before(now)
    if now is None or previous is None or previous.trainers != now.trainers:
        return None
    if now.ps_cpu == previous.ps_cpu:
        return None
    return _compared(now, observed.point(now), observed.point(previous), settings)


def _addition_speed(
    context: OptimizerContext, plan: PlanView, settings: PsScalingSettings
) -> _PsChangeSpeed | None:
    """The speed now against the configuration just before ``plan`` added PS, at the same
    trainers, not against the configuration before the current one: a PS migrated since
    would hide what the added PS did. The noise is ``min_gain``, or two standard errors
    when more. None while either has fewer than ``speed_samples`` samples, and when the
    trainers differ (their speed is not the PS's)."""
    observed = observe(context, SETTLE_S, STALL_SHARE)
    now = observed.current
    earlier = next((c for s, c in reversed(observed.measured) if s.ts < plan.applied_at), None)
    if now is None or earlier is None or now.ps_count == earlier.ps_count:
        return None
    if (now.trainers, now.trainer_cpu) != (earlier.trainers, earlier.trainer_cpu):
        return None
    return _compared(now, observed.point(now), observed.point(earlier), settings)


def _compared(
    now: Configuration, after: SpeedPoint, before: SpeedPoint, settings: PsScalingSettings
) -> _PsChangeSpeed | None:
    """The speed ``after`` (at ``now``) against the speed ``before``; the noise is
    ``min_gain``, or two standard errors when more. None while either has fewer than
    ``speed_samples`` samples."""
    if after.samples < settings.speed_samples or before.samples < settings.speed_samples:
        return None
    change = after.steps_per_sec / before.steps_per_sec - 1
    noise = max(settings.min_gain, 2 * math.hypot(after.relative_stderr, before.relative_stderr))
    return _PsChangeSpeed(now, after, before, change, noise)


def _paid(context: OptimizerContext, settings: PsScalingSettings) -> bool:
    """The speed at the same trainers rose by ``min_gain`` (two standard errors when more)
    from the configuration before the current one, which had other PS cores: the last
    PS change paid, measured on ``speed_samples`` samples each."""
    measured = _ps_change_speed(context, settings)
    return measured is not None and measured.change >= measured.noise


def _paused(context: OptimizerContext, recent: dict) -> Proposal | None:
    """A no-change answer while the speed samples over the node samples judged show a
    stall (a speed of 0, or below ``STALL_SHARE`` of their median): the trainers and PS
    then wait on data loading, a checkpoint or a PS down (a dead PS missing from the
    tier), and their CPU says nothing of what the tier needs."""
    since = min(s.ts for samples in recent.values() for s in samples)
    stalled = stalled_since(context, since, STALL_SHARE)
    if not stalled:
        return None
    window = sum(1 for s in context.speed if s.ts >= since)
    return no_change(
        NAME,
        f"{stalled} of the last {window} speed samples stalled: the CPU of the trainers "
        "and PS does not say what the tier needs",
        {"stalled_speed_samples": stalled},
        {"stall_share": STALL_SHARE},
    )


def _make_room(context, ps_nodes, recent, trainer_util, evidence, threshold, settings) -> Proposal:
    now = len(ps_nodes)
    request = _ps_request(context, ps_nodes)
    used = sum(_mean_use(ps_nodes, recent).values())
    wanted = math.ceil(used / (request * settings.target_utilization) - 1e-9)
    tier = evidence["ps_tier_utilization"]
    busiest = max(evidence["ps_utilization"].values())
    # Below saturation on average, the tier holds the speed through its busiest PS.
    busy = f" (its busiest PS at {busiest:.0%})" if tier < settings.saturation else ""
    waiting = (
        f"PS tier at {tier:.0%} CPU{busy}, the trainers at {trainer_util:.0%} of theirs "
        f"(> {settings.worker_wait:.0%}: not waiting on the PS)"
    )
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(used, 3),
        "ps_cpu_request": request,
        ROOM_FOR_WORKERS: True,
    }
    ceiling = _ceiling(context)
    if ceiling is not None and now + 1 > ceiling:
        return _no_more_help(now, ceiling, evidence, threshold)
    top = min(max(wanted, now + 1), now + settings.step, ceiling or now + settings.step)
    for count in range(top, now, -1):
        roles = {ROLE_PS: RoleSpec(count=count)}
        if not _over_limits(context, roles):
            break
    else:
        # A tier this busy under a full limit: workers for more, smaller PS, when the
        # trade is predicted to gain (it is judged and undone like any other). Beside a
        # pinned PS the room the limit leaves is worth a smaller gain, workers kept.
        trade_inputs = (context, ps_nodes, recent, trainer_util, evidence, settings)
        if busiest >= PINNED_BUSY:
            traded = _trade(*trade_inputs, "pinned_trade_min_gain", keep_workers=True)
            if traded is not None:
                return traded
        least = settings.paced_trade_min_gain
        traded = _trade(*trade_inputs, "paced_trade_min_gain")
        if traded is not None:
            return traded
        return no_change(
            NAME,
            f"{waiting}; one more PS would exceed the job's limits, and no trade of workers "
            f"for more, smaller PS is predicted to gain {least:.0%}",
            evidence,
            threshold | {"paced_trade_min_gain": least},
        )
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    return Proposal(
        roles=roles,
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"{waiting}, but a tier this busy holds back more workers and the limits "
                f"have room: {used:.2f} cores used, at {settings.target_utilization:.0%} of "
                f"{request:g} cores each -> PS {now} -> {count} (at most +{settings.step})",
                evidence,
                threshold,
            )
        ],
    )


def _did_not_help(context, ps_nodes, settings) -> Proposal | None:
    """Back to the PS count before ps_scaling's last addition, when the speed did not rise
    by ``min_gain`` over the speed just before it (``_addition_speed``; stalls and
    restarts left out)."""
    added = _last_addition(context)
    if added is None:
        return None
    plan, before = added
    if (context.now - plan.applied_at).total_seconds() < settings.judge_after_s:
        return None
    if any(r.optimizer == NAME and r.evidence.get(ROOM_FOR_WORKERS) for r in plan.reasons):
        # The trainers kept their pace when these PS came: the speed at the same trainers
        # was not theirs to raise (on a growing load, their worth shows later).
        return None
    if before >= len(ps_nodes):
        return None
    measured = _addition_speed(context, plan, settings)
    if measured is None:
        return None
    now, after, earlier, gain, noise = measured
    if gain >= noise:
        return None
    cpu_before = next(
        (r.evidence[PS_CPU_BEFORE] for r in plan.reasons if PS_CPU_BEFORE in r.evidence), None
    )
    hosts, evidence = _take_back(
        context, ps_nodes, before, {TAKEN_BACK_TO: before}, after, earlier, settings
    )
    back = f"PS {len(ps_nodes)} -> {before}" + (
        "" if cpu_before is None else f", {cpu_before:g} cores each as before"
    )
    roles = {ROLE_PS: _resized(context, ps_nodes, before, cpu_before)}
    return Proposal(
        roles=roles,
        migrate=_kept_above(context, ps_nodes, roles),
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"adding PS ({before} -> {len(ps_nodes)}, plan {plan.id}) changed the speed at "
                f"{now.trainers} trainers {earlier.steps_per_sec:.2f} -> "
                f"{after.steps_per_sec:.2f} steps/s ({gain:+.1%}, less than {noise:.1%}): it did "
                f"not help, {back}",
                evidence,
                {"min_gain": settings.min_gain, "judge_after_s": settings.judge_after_s},
            )
        ],
    )


def _take_back(
    context, ps_nodes, count: int, undone: dict, after, previous, settings
) -> tuple[list[str], dict]:
    """The tier's addresses at ``count`` PS and the evidence of a take-back: what it
    undoes (``undone``) and the speeds after and before the change it judged."""
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    evidence = {
        "ps_count": len(ps_nodes),
        **undone,
        "steps_per_sec": round(after.steps_per_sec, 4),
        "previous_steps_per_sec": round(previous.steps_per_sec, 4),
        "speed_gain": round(after.steps_per_sec / previous.steps_per_sec - 1, 4),
    }
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    return hosts, evidence


def _shrink_hurt(context, ps_nodes, settings) -> Proposal | None:
    """Back to the PS count and CPU before ps_scaling's last shrink, when the speed at the
    same trainers fell by more than ``min_gain`` (or two standard errors) after it."""
    found = _ps_plan_to_judge(context, SHRUNK_FROM, settings)
    if found is None:
        return None
    newest, evidence = found
    shrunk = evidence[SHRUNK_FROM]
    measured = _ps_change_speed(context, settings)
    if measured is None:
        return None
    now, after, earlier, change, noise = measured
    if change >= -noise:
        return None
    count, cpu = shrunk["count"], shrunk["cpu"]
    hosts, evidence = _take_back(
        context, ps_nodes, count, {SHRINK_UNDONE: shrunk}, after, earlier, settings
    )
    roles = {ROLE_PS: RoleSpec(count=None if count == len(ps_nodes) else count, cpu=cpu)}
    return Proposal(
        roles=roles,
        # A PS that a trim kept at its own size (a moved hot PS) keeps it.
        migrate=_kept_above(context, ps_nodes, roles),
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"shrinking the PS (plan {newest.id}) changed the speed at {now.trainers} "
                f"trainers {earlier.steps_per_sec:.2f} -> {after.steps_per_sec:.2f} steps/s "
                f"({change:+.1%}, more than {noise:.1%} down): back to {count} PS of {cpu:g} "
                "cores, and no more shrinking",
                evidence,
                {"min_gain": settings.min_gain, "judge_after_s": settings.judge_after_s},
            )
        ],
    )


def _shrink_undone(context) -> bool:
    """A shrink of ps_scaling's was taken back: the tier needed what it had."""
    return any(True for _ in _applied_evidence(context, SHRINK_UNDONE))


def _applied_evidence(context, key: str) -> Iterator:
    """The value of ``key`` in the evidence of every reason ps_scaling gave in an applied
    plan."""
    return (
        r.evidence[key]
        for p in context.plans
        if p.status == PlanStatus.applied
        for r in p.reasons
        if r.optimizer == NAME and key in r.evidence
    )


def _ps_plan_to_judge(context, key: str, settings) -> tuple[PlanView, dict] | None:
    """The newest applied PS plan whose ps_scaling reason carries ``key``, with that
    evidence, once ``judge_after_s`` has passed since it was applied; None before."""
    found = _newest_ps_plan(context, key)
    if found is None:
        return None
    newest, _ = found
    if (context.now - newest.applied_at).total_seconds() < settings.judge_after_s:
        return None
    return found


def _newest_ps_plan(context, key: str, counted: bool = False) -> tuple[PlanView, dict] | None:
    """The newest applied plan that changed the PS role (set its count, when ``counted``),
    with the evidence of its ps_scaling reason that carries ``key``: None when there is
    no such plan or the newest one does not carry it (another change came after)."""
    applied = [
        p
        for p in context.plans
        if p.status == PlanStatus.applied
        and p.applied_at is not None
        and ROLE_PS in p.roles
        and (not counted or p.roles[ROLE_PS].count is not None)
    ]
    if not applied:
        return None
    newest = max(applied, key=lambda p: p.applied_at)
    evidence = next(
        (r.evidence for r in newest.reasons if r.optimizer == NAME and key in r.evidence), None
    )
    return None if evidence is None else (newest, evidence)


def _last_addition(context) -> tuple[PlanView, int] | None:
    """The newest applied plan that set the PS count, with the count before it, when it was
    ps_scaling adding PS (None otherwise)."""
    found = _newest_ps_plan(context, "ps_count", counted=True)
    if found is None:
        return None
    newest, evidence = found
    before = evidence["ps_count"]
    if (
        TAKEN_BACK_TO in evidence
        or SHRINK_UNDONE in evidence
        or TRADED_FROM in evidence
        or not isinstance(before, int)
        or newest.roles[ROLE_PS].count <= before
    ):
        return None
    return newest, before


def _ceiling(context) -> int | None:
    """The lowest PS count a take-back of added PS went back to: more did not help."""
    return min(_applied_evidence(context, TAKEN_BACK_TO), default=None)


def _smaller_tier(
    context, ps_nodes, recent, tier_util, evidence, threshold, settings
) -> Proposal | None:
    """A shrink of a tier below ``shrink_below`` or a trim of one below ``trim_below``,
    the trainers not waiting on it: fewer PS only when no count changed for
    ``shrink_after_s``; fewer cores for each from ``trim_after_s`` on, when the job ran no
    more workers within ``shrink_after_s`` than it runs now (their load comes back with
    them). None when neither applies or frees enough."""
    if tier_util >= max(settings.shrink_below, settings.trim_below):
        return None
    if tier_util < settings.shrink_below and _counts_steady(context, settings.shrink_after_s):
        return _shrink(context, ps_nodes, recent, evidence, threshold, settings)
    if not _counts_steady(context, settings.trim_after_s) or _workers_fewer_than_lately(
        context, settings.shrink_after_s
    ):
        return None
    if tier_util < settings.shrink_below:
        return _shrink(context, ps_nodes, recent, evidence, threshold, settings, cores_only=True)
    return _trim(context, ps_nodes, recent, evidence, threshold, settings)


def _shrink(
    context, ps_nodes, recent, evidence, threshold, settings, cores_only: bool = False
) -> Proposal | None:
    """Fewer PS, or, when no fewer run the load at ``target_utilization`` (one PS, or an
    uneven or small tier) or fewer free less than ``min_freed_share``, fewer cores for
    each: today's load at ``target_utilization``,
    the busiest PS projected at most ``max_busy``. None when the
    tier's PS are not all of the role's size (a migrated hot PS), or nothing smaller holds
    the load."""
    role = current_role(ROLE_PS, context.job, context.nodes)
    request = role.cpu or ps_nodes[0].cpu
    if any(n.cpu != request for n in ps_nodes):
        return None
    now = len(ps_nodes)
    used = _mean_use(ps_nodes, recent)
    total = sum(used.values())
    busiest = max(used.values())
    # The busiest PS's load over the mean: merged shards keep the tier's unevenness.
    skew = busiest / (total / now) if total > 0 else 1.0
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(total, 3),
        "ps_cpu_request": request,
    }
    job_cores = planned_totals({}, context.job, context.nodes).cpu
    least = settings.min_freed_share * job_cores
    if now > 1 and not cores_only:
        count = max(math.ceil(total * skew / (request * settings.target_utilization) - 1e-9), 1)
        # Fewer PS that free too few cores leave the cores of each to give back instead.
        if count < now and (now - count) * request >= least:
            return _fewer_ps(
                context, ps_nodes, recent, role, count, total, skew, evidence, threshold, settings
            )
    # No fewer PS run the load at the target, or free enough: each PS gets fewer cores.
    return _fewer_cores(
        context,
        ps_nodes,
        request,
        used,
        least,
        settings.shrink_below,
        settings.target_utilization,
        0.75 * request,
        evidence,
        threshold,
        settings,
    )


def _trim(context, ps_nodes, recent, evidence, threshold, settings) -> Proposal | None:
    """Fewer cores for each PS of a tier below ``trim_below`` (above ``shrink_below``):
    the busiest PS's mean use at ``trim_to``, when that frees ``min_freed_share`` of the
    job's cores and the CPU limit keeps more workers out; None otherwise. A comm-bound
    job under a full limit kept 3 PS of 1.1 cores at 57 % while its workers could not
    grow: the cores the tier does not use are the workers' (worker_tuning makes them more).

    PS that hot_ps moved above the role's size keep their cores: the others are trimmed,
    the busiest of them setting the size, the cores freed counted from each one's own
    (hot_ps may have taken some for the moved one). A hot-ps job kept 3 PS of 0.8-0.9
    cores at 45 % beside its hot PS, moved to 1.4, under a full 11.1-core limit."""
    request = _ps_request(context, ps_nodes)
    if not _workers_held_by_the_limit(context):
        return None
    moved = [n for n in ps_nodes if n.cpu > request + 1e-9]
    rest = [n for n in ps_nodes if n not in moved]
    # Without a moved PS, one below the role's size is a move of another kind (a give-back
    # under way): the tier is not trimmed around it.
    if not rest or (not moved and any(n.cpu != request for n in rest)):
        return None
    least = settings.min_freed_share * planned_totals({}, context.job, context.nodes).cpu
    evidence = evidence | {"ps_count": len(ps_nodes), "ps_cpu_request": request}
    beside = "".join(f"{n.name} keeps its {n.cpu:g} cores of its own; " for n in moved)
    trimmed = _fewer_cores(
        context,
        rest,
        request,
        _mean_use(rest, recent),
        least,
        settings.trim_below,
        settings.trim_to,
        # Fewer cores than the role's, however few.
        request - 1e-9,
        evidence,
        threshold,
        settings,
        ", the rest for more workers, which the CPU limit keeps out",
        beside,
    )
    if trimmed is None or not moved:
        return trimmed
    return replace(trimmed, migrate=[_own_size(trimmed.roles, n, n.cpu) for n in moved])


def _workers_held_by_the_limit(context) -> bool:
    """Whether the job's CPU limit is what keeps one more worker (of today's size) out:
    below its max_count, with less room under the limit than a worker's cores."""
    limit = context.job.limits.cpu
    workers = current_role(ROLE_WORKER, context.job, context.nodes)
    maximum = context.job.bounds_of(ROLE_WORKER).max_count
    count = workers.count or 0
    if limit is None or not workers.cpu or (maximum is not None and count >= maximum):
        return False
    return limit - planned_totals({}, context.job, context.nodes).cpu < workers.cpu


def _fewer_cores(
    context,
    ps_nodes,
    request,
    used,
    least,
    below,
    target,
    most,
    evidence,
    threshold,
    settings,
    why="",
    beside="",
) -> Proposal | None:
    """``ps_nodes`` (of ``request`` cores, the role's, or each of its own) to the busiest
    one's mean use (``used``) at ``target`` (rounded up to ``cpu_step``), when that is at
    most ``most``, keeps the busiest within ``max_busy`` and frees ``least`` cores from
    what they have; None otherwise. A shrink's or a trim's plan, judged alike
    (``SHRUNK_FROM``: the tier's count, ``evidence["ps_count"]``, and the role's CPU).
    ``beside`` names the PS kept apart, for the message."""
    now = len(ps_nodes)
    busiest = max(used.values())
    cpu = max(ceil_to(busiest / target, settings.cpu_step), settings.cpu_step)
    freed = sum(n.cpu - cpu for n in ps_nodes)
    if cpu > most or busiest / cpu > settings.max_busy or freed < least:
        return None
    own = next(n.cpu for n in ps_nodes if used[n.name] == busiest)
    sizes = sorted({n.cpu for n in ps_nodes})
    was = f"{sizes[0]:g}" if len(sizes) == 1 else f"{sizes[0]:g}-{sizes[-1]:g}"
    other = " other" if beside else ""
    uses = f"the{other} PS uses" if now == 1 else f"the busiest of {now}{other} PS uses"
    role = _resized(context, ps_nodes, None, cpu)
    return Proposal(
        roles={ROLE_PS: role},
        reasons=[
            reason(
                NAME,
                f"{beside}{uses} {busiest:.2f} of its {own:g} cores "
                f"({evidence['ps_tier_utilization']:.0%}, below {below:.0%}): "
                f"{cpu:g} cores run it at {busiest / cpu:.0%} (target "
                f"{target:.0%}), PS CPU {was} -> {cpu:g}{_kept_memory(role)}{why}",
                evidence
                | {"new_cpu": cpu, SHRUNK_FROM: {"count": evidence["ps_count"], "cpu": request}},
                threshold,
            )
        ],
    )


def _counts_steady(context, seconds: float) -> bool:
    """No applied plan changed a role's count within ``seconds``."""
    return not _applied_within(
        context, seconds, lambda p: any(spec.count is not None for spec in p.roles.values())
    )


def _applied_within(context, seconds: float, changed: Callable[[PlanView], bool]) -> bool:
    """An applied plan for which ``changed`` holds is younger than ``seconds``."""
    return any(
        p.status == PlanStatus.applied
        and p.applied_at is not None
        and (context.now - p.applied_at).total_seconds() < seconds
        and changed(p)
        for p in context.plans
    )


def _fewer_ps(context, ps_nodes, recent, role, count, total, skew, evidence, threshold, settings):
    now = len(ps_nodes)
    request = role.cpu or ps_nodes[0].cpu
    peak = max(max(s.memory_mib for s in recent[n.name]) for n in ps_nodes)
    cap = context.node_max.memory_mib
    while count < now:
        memory = ceil_mib(peak * now / count * settings.memory_margin)
        projected = total * skew / count / request
        if projected <= settings.max_busy and memory <= cap:
            break
        count += 1
    if count >= now:
        return None
    memory = max(
        ceil_mib((role.memory_mib or 0.0) * now / count),
        ceil_mib(peak * now / count * settings.memory_margin),
    )
    roles = {ROLE_PS: RoleSpec(count=count, memory_mib=memory)}
    if _over_limits(context, roles):
        return None
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    if unnamed:
        evidence = evidence | {"ps_hosts_unknown": unnamed}
    return Proposal(
        roles=roles,
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"PS tier at {evidence['ps_tier_utilization']:.0%} CPU, below "
                f"{settings.shrink_below:.0%}: over-provisioned. Its {total:.2f} cores of "
                f"load on {count} PS of {request:g} cores run at {total / count / request:.0%} "
                f"(the busiest at {total * skew / count / request:.0%}, at most "
                f"{settings.max_busy:.0%}): PS {now} -> {count}, each with {memory:g} MiB for "
                f"its larger share (the tier's memory shared among {count}, at least its peak "
                f"{peak:g} MiB x {now}/{count} x {settings.memory_margin:g})",
                evidence
                | {
                    "ps_memory_peak_mib": peak,
                    "new_memory_mib": memory,
                    SHRUNK_FROM: {"count": now, "cpu": request},
                },
                threshold,
            )
        ],
    )


def _no_more_help(now, ceiling, evidence, threshold) -> Proposal:
    return no_change(
        NAME,
        f"more than {ceiling} PS did not help earlier: staying at {now}",
        evidence | {"ceiling": ceiling},
        threshold,
    )


def _saturated(ps_util: dict[str, float], tier_util: float, settings: PsScalingSettings) -> bool:
    """The tier holds the speed of trainers that keep their pace: its mean utilization
    is at least ``saturation``, or its busiest PS is and is not hot on its own. hot_ps
    leaves such a PS where it is (the others nearly as busy: more PS would help, not a
    larger one), so unless the tier counts as saturated no rule acts: a hot-ps job sat
    30 minutes with PS 0 at 100 % and the other seven at 78 %, the mean 79 %. (Trainers
    that wait beside a tier below ``saturation`` on average take the network path.)"""
    if tier_util >= settings.saturation:
        return True
    busiest = max(ps_util.values())
    return busiest >= settings.saturation and _hot_alone(ps_util, settings.relative_factor) is None


def _hot_alone(utilization: dict[str, float], factor: float) -> str | None:
    for name, value in utilization.items():
        others = [u for other, u in utilization.items() if other != name]
        if others and value >= factor * median(others):
            return name
    return None


def _stall(context: OptimizerContext, settings: PsScalingSettings) -> dict | Proposal:
    """The speed's change between the older and newer half of the samples at the current
    worker count, when below ``stall_gain``; else a no-change answer."""
    current = []
    for sample in reversed(context.speed):
        if current and sample.workers != current[-1].workers:
            break
        current.append(sample)
    current = current[: settings.speed_samples][::-1]
    if len(current) < settings.speed_samples:
        return no_change(
            NAME,
            f"waiting for {settings.speed_samples} speed samples at the current worker count",
            {"speed_samples": len(current)},
            {"speed_samples": settings.speed_samples},
        )
    half = len(current) // 2
    older = mean([s.steps_per_sec for s in current[:half]])
    newer = mean([s.steps_per_sec for s in current[half:]])
    change = (newer - older) / older if older > 0 else 0.0
    if change >= settings.stall_gain:
        return no_change(
            NAME,
            f"speed still rising ({change:+.1%} >= {settings.stall_gain:.0%}): waiting",
            {"speed_change": round(change, 4)},
            {"stall_gain": settings.stall_gain},
        )
    return {"speed_change": round(change, 4), "steps_per_sec": round(newer, 3)}


def _ps_hosts(
    context: OptimizerContext, ps_nodes: list[NodeView], count: int, port: int
) -> tuple[list[str], list[str]]:
    """The tier's service addresses after the change, in rank order: DLRover's
    ``<pod>.<namespace>.svc:<port>`` (``<pod>:<port>`` without a namespace). New PS are
    named after the existing ones' ``<prefix><index>``, fewer PS drop the highest ranks;
    PS named otherwise make the list unknown (returned second, and ``ps_hosts`` is left
    empty)."""
    unnamed = [n.name for n in ps_nodes if not n.name.endswith(f"-{n.index}")]
    if unnamed:
        return [], unnamed
    first = ps_nodes[0]
    prefix = first.name[: -len(str(first.index))]
    names = [n.name for n in ps_nodes]
    next_index = max(n.index for n in ps_nodes) + 1
    names += [f"{prefix}{next_index + i}" for i in range(count - len(ps_nodes))]
    names = names[:count]  # fewer PS: the highest ranks go
    domain = f".{context.job.namespace}.svc" if context.job.namespace else ""
    return [f"{name}{domain}:{port}" for name in names], []


def _relieve_hot(context, ps_nodes, recent, hot, trainer_util, evidence, settings):
    """The trade for a hot PS the trainers wait on, when it cannot grow: the CPU limit
    leaves it no room for the trainers' full pace, it is at the largest node, or it was
    moved to a larger size already and is still hot (CPU past its knee buys little).
    None otherwise (hot_ps moves it)."""
    if trainer_util > settings.worker_wait:
        return None
    node = next(n for n in ps_nodes if n.name == hot)
    room = None
    if context.job.limits.cpu is not None:
        room = context.job.limits.cpu - planned_totals({}, context.job, context.nodes).cpu
    wanted = node.cpu * (1 / max(trainer_util, 0.05) - 1)
    if not (
        _moved(context, ps_nodes, hot) is not None
        or node.cpu >= context.node_max.cpu
        or (room is not None and room < wanted)
    ):
        return None
    stall = _stall(context, settings)
    if isinstance(stall, Proposal):
        return stall
    return _trade(context, ps_nodes, recent, trainer_util, evidence | stall, settings)


class _Cost(NamedTuple):
    """PS core-seconds per global step, and when the tier ran at it."""

    ps_cpu_per_step: float
    seen_at: datetime


def _window_cost(ratios: list[tuple]) -> _Cost | None:
    """The tier's cost per step at its most efficient in today's sample window: the
    median of the four lowest ``ratios`` (``cost_ratios``), seen at the oldest of them."""
    lowest = sorted(ratios, key=lambda point: point[1])[:4]
    if len(lowest) < 4:
        return None
    return _Cost(median(cost for _, cost in lowest), min(ts for ts, _ in lowest))


def _least_cost_per_step(context, window: _Cost | None) -> _Cost | None:
    """The tier's cost per step at its most efficient within ``KNEE_MEMORY_S``: the least
    of today's ``window``'s (``_window_cost``) and what earlier rounds carried
    (``LEAST_COST``). A PS past its knee burns more cores per step than one below it,
    which a split into smaller PS wins back; a cost seen longer ago says little of
    today's (a model's load per step grows)."""
    found = [] if window is None else [window]
    oldest = context.now - timedelta(seconds=KNEE_MEMORY_S)
    for p in context.plans:
        for r in p.reasons:
            carried = r.evidence.get(LEAST_COST) if r.optimizer == NAME else None
            if not isinstance(carried, dict):
                continue
            seen_at = datetime.fromisoformat(carried["seen_at"])
            if seen_at >= oldest:
                found.append(_Cost(carried["ps_cpu_per_step"], seen_at))
    return min(found) if found else None


def _trade(
    context,
    ps_nodes,
    recent,
    trainer_util,
    evidence,
    settings,
    least: str = "trade_min_gain",
    keep_workers: bool = False,
) -> Proposal | None:
    """More, smaller PS and, when they do not fit beside the workers within the limits,
    fewer workers, in one plan: the PS tier holds the speed and cannot grow. A no-change
    proposal while a tier past its knee waits for the last change's verdict.

    The trainers at their full pace run ``speed / trainer utilization`` (linear in their
    count, which is no more than a sublinear curve promises for fewer); ``k`` PS of ``c``
    cores serve ``c x max_busy / (cost x share)`` steps/s, where cost is the tier's CPU per
    step at its most efficient in the window, or the least it ran at lately when that is
    well below (a knee, ``_least_cost_per_step``), and share the busiest PS's part of the
    traffic (a hot shard stays on its PS: ``hot + (1 - hot) / k``, the hot part read from
    today's loads, ``_hot_share``). For one or ``step`` more PS, the most workers that fit
    beside PS sized for their speed; the best predicted speed is taken when it gains
    the setting named ``least`` (``trade_min_gain`` for a tier past its knee). With
    ``keep_workers`` only trades that keep every worker are weighed, none with the
    busiest PS kept apart, and none against a PS load that grows per step. Past its
    knee no PS gets more than the cores the busiest serves like today at that cost
    (``cost x speed x its share``), which bound its knee: the trade takes more PS, or PS
    that serve less than the trainers' full pace, over cores that mostly spin. Where the
    busiest PS would serve more than ``TRADE_MAX_SPREAD`` x the average load, the role is
    sized for the other PS and the busiest keeps its cores of today, counted on for no
    more than it serves today (its cost per step may be its knee's); only once hot_ps
    moved it to a size of its own (before, moving it is hot_ps's). Where that move took it
    past its knee (``past_knee``: its CPU per step grew by more than 1 / ``KNEE_COST_SHARE``),
    it may instead go back to its cores before the move, counted on for what it served
    then, when that predicts more (the cores it frees fit more PS under the limit)."""
    now = len(ps_nodes)
    ceiling = _ceiling(context)
    undone = _undone_trades(context)
    if any(not before.get(KNEE) for before in undone) or "steps_per_sec" not in evidence:
        return None
    speed = evidence["steps_per_sec"]
    ps_role = current_role(ROLE_PS, context.job, context.nodes)
    workers = current_role(ROLE_WORKER, context.job, context.nodes)
    chiefs = current_role(ROLE_CHIEF, context.job, context.nodes).count or 0
    if not workers.count or not workers.cpu or speed <= 0:
        return None
    used = _mean_use(ps_nodes, recent)
    total = sum(used.values())
    hot_node = max(ps_nodes, key=lambda n: used[n.name])
    # At the tier's most efficient in today's window, at most today's.
    ratios = cost_ratios(context)
    window = _window_cost(ratios)
    cost = total / speed if window is None else min(window.ps_cpu_per_step, total / speed)
    # PS past their knee: within the last half hour they served a step with much fewer
    # cores, which smaller PS win back. Not where the cost per step rose while the
    # configuration stayed (a load that grows per step), nor after such a trade did not
    # pay, nor before the last change of the PS or the workers is judged.
    cheapest = _least_cost_per_step(context, window)
    below = (
        cheapest is not None
        and cheapest.ps_cpu_per_step < KNEE_COST_SHARE * cost
        and not any(before.get(KNEE) for before in undone)
    )
    growing = cost_growing(context, ratios)
    if keep_workers and growing:
        # The trade is predicted at today's cost per step, which such a load outgrows
        # (ps-growing-load: 84.09 -> 77.75 steps/s).
        return None
    unjudged = _change_unjudged(context, settings)
    if below and not growing and unjudged:
        # A knee, but the last change's verdict is still to come: a trade now would size
        # the PS at the dearer cost past it, and once such a trade is taken back no trade
        # is made again. The next round trades on the knee's cost.
        return no_change(
            NAME,
            "the PS hold the speed and cannot grow; the tier ran at "
            f"{cheapest.ps_cpu_per_step:.4f} PS core-s per step, below {KNEE_COST_SHARE:g} x "
            f"today's {cost:.4f}: past its knee, where more, smaller PS serve a step with "
            "fewer cores. A trade waits for the verdict on the last change of the PS or the "
            f"workers ({settings.judge_after_s:g} s after it), then counts on that cost",
            evidence | {"ps_cpu_per_step": round(cost, 6)},
            {"judge_after_s": settings.judge_after_s},
        )
    settled = not growing and not unjudged
    knee = settled and below
    if knee:
        cost = cheapest.ps_cpu_per_step
    hot = _hot_share(used, hot_node.name, cost * speed)
    pace = speed / max(trainer_util, 0.05) / (workers.count + chiefs)
    # Today the busiest PS serves this part of the traffic.
    busiest_share = hot + (1 - hot) / now
    # A tier whose cost per step counted on is well below today's is past its knee
    # (unless its load grows per step or a verdict is pending): its cores serve less
    # than they did there.
    past = settled and cost < KNEE_COST_SHARE * total / speed
    # Past it, the busiest PS serves today what cost x speed x its share cores would
    # serve at the knee's cost, so its knee is at most that many cores: the cores beyond
    # buy little, and no PS of the trade gets more (more PS get the rest).
    knee_cpu = ceil_to(cost * speed * busiest_share, settings.cpu_step) if past else None

    def size(load_share: float, wanted: float) -> float:
        cpu = ceil_to(cost * wanted * load_share / settings.max_busy, settings.cpu_step)
        if knee_cpu is not None:
            cpu = min(cpu, knee_cpu)
        return min(max(cpu, settings.cpu_step), context.node_max.cpu)

    # A busiest PS kept apart holds its cores of today and serves at most what it serves
    # today; past its knee, it may instead go back to its cores before hot_ps moved it,
    # serving what it served then: the cores the move gave it bought little, and under a
    # full limit they are what more PS need.
    hot_knee = past_knee(context, hot_node, recent[hot_node.name])
    keeps = [(hot_node.cpu, speed, False)]
    if hot_knee is not None:
        keeps.append((hot_knee.move.cpu_before, hot_knee.move.steps_per_sec, True))
    best = None
    for k in range(now + 1, now + settings.step + 1):
        if ceiling is not None and k > ceiling:
            break
        share = hot + (1 - hot) / k
        # Past TRADE_MAX_SPREAD the busiest PS keeps its cores of today, and serves at
        # most what it serves today, over its smaller part of the traffic: its cost per
        # step may be its knee's, dearer than the tier's at its most efficient, and a
        # plan that adds PS moves none to more cores (moving it is hot_ps's).
        apart = k * share > TRADE_MAX_SPREAD
        if apart and keep_workers:
            # Its gain is the hot PS's smaller part of the traffic alone: too near the noise
            # for a trade made at pinned_trade_min_gain.
            continue
        if apart and hot_node.cpu <= (ps_role.cpu or 0.0) + 1e-9:
            # Not moved to a size of its own yet: hot_ps moves it first.
            continue
        cool = (1 - hot) / k if apart else share
        for kept_cpu, kept_speed, back in keeps if apart else keeps[:1]:
            # The guard fits the workers to the role sizes, not to a PS kept apart: such a
            # trade keeps the workers it has.
            for n in range(workers.count, workers.count - 1 if apart or keep_workers else 0, -1):
                wanted = pace * (n + chiefs)
                cpu = size(cool, wanted)
                hot_cpu = max(cpu, kept_cpu) if apart else cpu
                busiest_serves = (
                    kept_speed * busiest_share / share
                    if apart
                    else cpu * settings.max_busy / (cost * share)
                )
                predicted = min(wanted, cpu * settings.max_busy / (cost * cool), busiest_serves)
                roles = {ROLE_PS: _resized(context, ps_nodes, k, cpu)}
                if _over_limits(context, roles | {ROLE_WORKER: RoleSpec(count=n)}, hot_cpu - cpu):
                    continue
                if best is None or predicted > best[0] * 1.01:
                    held = (hot_cpu, kept_speed, back) if apart else None
                    best = (predicted, k, n, cpu, held, roles)
                break
    if past and not keep_workers:
        # A tier past its knee wastes cores however busy the trainers look: their unused
        # CPU is not all the trade is predicted from.
        least = "trade_min_gain"
    # Named as the setting that set it, in the plan's thresholds.
    least_name, least = least, getattr(settings, least)
    if best is None or best[0] / speed - 1 < least:
        return None
    predicted, k, n, cpu, held, roles = best
    hot_cpu, kept_speed, back = held if held is not None else (None, speed, False)
    if n < workers.count and _workers_grown_recently(context, settings.reverse_after_s):
        # The guard would cut workers a plan added within reverse_after_s: an oscillation.
        return None
    hosts, unnamed = _ps_hosts(context, ps_nodes, k, settings.ps_port)
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(total, 3),
        "ps_cpu_per_step": round(cost, 6),
        "hot_share": round(hot, 3),
        "predicted_steps_per_sec": round(predicted, 3),
        TRADED_FROM: {
            "ps_count": now,
            "ps_cpu": ps_role.cpu,
            "workers": workers.count,
            "worker_cpu": workers.cpu,
            KNEE: knee,
        },
    }
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    # The workers' part is the guard's: it cuts the workers (elastic ones first) to what
    # fits beside these PS, here n. ps_scaling sets the PS group alone, so a master that
    # applies the PS group and the worker group at separate stages gets both halves.
    fewer = (
        ""
        if n == workers.count
        else f"; the guard fits the workers to the limits beside them: {workers.count} -> {n}"
    )
    share = hot + (1 - hot) / k
    migrate, own, kept = [], "", ""
    if hot_cpu is not None:
        # Past its knee it may go back to the role's new size while the role keeps its
        # cores (no PS relaunched): it is moved there too.
        moved = hot_cpu > cpu or hot_node.cpu > hot_cpu + 1e-9
        migrate = [_own_size(roles, hot_node, hot_cpu)] if moved else []
        evidence["hot_ps"] = {"node": hot_node.name, "cpu": hot_cpu}
        own = (
            f"; {hot_node.name}, the busiest, keeps its {hot_cpu:g} cores, as busy as today "
            f"over {share:.0%} of the traffic instead of {busiest_share:.0%}: at most "
            f"{speed * busiest_share / share:.2f} steps/s"
            if not back
            else f"; {hot_node.name}, the busiest, is past its knee (its CPU per step grew "
            f"x{hot_knee.cost_per_step / hot_knee.move.cost_per_step:.2f} after plan "
            f"{hot_knee.move.plan.id} moved it from {hot_knee.move.cpu_before:g} cores): "
            f"back to {hot_cpu:g} cores, where it served {kept_speed:.2f} steps/s over "
            f"{busiest_share:.0%} of the traffic, over {share:.0%}: at most "
            f"{kept_speed * busiest_share / share:.2f} steps/s"
        )
        kept = f", {hot_node.name} {hot_cpu:g}"
    return Proposal(
        roles=roles,
        migrate=migrate,
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"the PS hold the speed ({speed:.2f} steps/s, the trainers use "
                f"{trainer_util:.0%} of their CPU) and cannot grow: at full pace "
                f"{n + chiefs} trainers run {pace * (n + chiefs):.2f} steps/s, and {k} PS of "
                f"{cpu:g} cores serve it at most {settings.max_busy:.0%} busy ({cost:.4f} "
                f"PS core-s per step at the tier's most efficient, the busiest PS "
                f"{share:.0%} of the traffic{own}): predicted {predicted:.2f} steps/s "
                f"({predicted / speed - 1:+.0%}). PS {now} -> {k}, {ps_role.cpu:g} -> "
                f"{cpu:g} cores each{kept}{fewer}",
                evidence,
                {
                    least_name: least,
                    "max_busy": settings.max_busy,
                    "step": settings.step,
                    "worker_wait": settings.worker_wait,
                },
            )
        ],
    )


def _kept_above(context, ps_nodes: list[NodeView], roles: dict[str, RoleSpec]) -> list[NodeChange]:
    """The PS that stay and run above both the role's CPU and its new CPU in ``roles``
    (the busiest, moved to a size of its own), kept at it: a new role size relaunches
    every PS at it, and a take-back returns to what ran before, that PS's size with it.
    A failed PS counts (it comes back at the role's size too). None where the role's CPU
    stays (no PS is relaunched); every PS stays where ``roles`` keeps today's count."""
    spec = roles[ROLE_PS]
    role = current_role(ROLE_PS, context.job, context.nodes)
    if spec.cpu is None or spec.cpu == role.cpu:
        return []
    failed = [n for n in context.failed_nodes if n.role == ROLE_PS]
    return [
        _own_size(roles, n, n.cpu)
        for n in sorted([*ps_nodes, *failed], key=lambda n: n.index)
        if (spec.count is None or n.index < spec.count)
        and n.cpu > max(spec.cpu, role.cpu or 0.0) + 1e-9
    ]


def _own_size(roles: dict[str, RoleSpec], node: NodeView, cpu: float) -> NodeChange:
    """The busiest PS moved to ``cpu`` cores of its own beside the PS role of ``roles``
    (sized for the others), with the most memory of its own and the role's: a master
    relaunches it at exactly both, so both are filled."""
    memory = max(node.memory_mib, roles[ROLE_PS].memory_mib or 0.0)
    return NodeChange(ROLE_PS, node.name, cpu=cpu, memory_mib=memory)


def _hot_share(used: dict[str, float], busiest: str, traffic_cpu: float | None) -> float:
    """The busiest PS's part of the traffic beyond an even split (a hot part that stays on
    it), from the PS's CPU ``used``. ``traffic_cpu``, the cores the tier uses for today's
    speed at its most efficient (its least cost per step x the speed), bounds it when
    given: a PS past its knee burns more cores for its traffic than the others, so its
    use overstates its part, while the others' tell theirs where they are below it (where
    they use more than their even part of ``traffic_cpu``, they are past it too, and tell
    nothing). At today's cost per step the bound is the use's own reading."""
    count, total = len(used), sum(used.values())
    if count < 2 or total <= 0:
        return 0.0
    others = (total - used[busiest]) / (count - 1)
    hot = max((used[busiest] - others) / total, 0.0)
    below_knee = 1 - count * others / traffic_cpu if traffic_cpu else 0.0
    return min(hot, below_knee) if below_knee > 0 else hot


def _change_unjudged(context, settings: PsScalingSettings) -> bool:
    """A plan that set the PS or the worker role was applied less than ``judge_after_s``
    ago: its verdict is still to come, which a trade on a cost seen before it would hide."""
    return _applied_within(
        context, settings.judge_after_s, lambda p: ROLE_PS in p.roles or ROLE_WORKER in p.roles
    )


def _undone_trades(context) -> list[dict]:
    """What the job ran before each trade of ps_scaling's that was taken back. After one
    that counted on the least cost per step (``KNEE``), trades count on the window's;
    after any other, the job is not traded again."""
    return list(_applied_evidence(context, TRADE_UNDONE))


def _trade_did_not_help(context, ps_nodes, trainers, recent, settings) -> Proposal | None:
    """Back to the configuration before ps_scaling's last trade (PS count and CPU,
    workers and their CPU), when the speed after it did not rise by ``min_gain`` (two
    standard errors when more) over the speed before it, judged ``judge_after_s`` after.
    When it did, the PS are right-sized (``_right_size``)."""
    found = _ps_plan_to_judge(context, TRADED_FROM, settings)
    if found is None:
        return None
    newest, evidence = found
    before = evidence[TRADED_FROM]
    observed = observe(context, SETTLE_S, STALL_SHARE)
    now = observed.current
    earlier = next((c for s, c in reversed(observed.measured) if s.ts < newest.applied_at), None)
    if (
        now is None
        or earlier is None
        or now == earlier
        or _workers_set_after(context, newest, settings)
    ):
        return None
    # The speed just before the trade, not the mean of all the job ran at that
    # configuration: a PS load that grows slows it down the longer it runs, and its early
    # samples would make any later speed look slower.
    previous = _newest_point(observed, earlier, settings.speed_samples)
    measured = _compared(now, observed.point(now), previous, settings)
    if measured is None:
        return None
    after, change, noise = measured.after, measured.change, measured.noise
    if change >= noise:
        return _right_size(context, ps_nodes, trainers, recent, settings)
    count, cpu = before["ps_count"], before["ps_cpu"]
    # Not TAKEN_BACK_TO: a trade that did not pay (fewer workers beside the PS) does not
    # show that more PS would not, and a ceiling would hold a growing load back.
    hosts, evidence = _take_back(
        context, ps_nodes, count, {TRADE_UNDONE: before}, after, previous, settings
    )
    roles = {ROLE_PS: _resized(context, ps_nodes, count, cpu)}
    return Proposal(
        roles=roles,
        migrate=_kept_above(context, ps_nodes, roles),
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"trading workers for PS (plan {newest.id}) changed the speed "
                f"{previous.steps_per_sec:.2f} -> {after.steps_per_sec:.2f} steps/s "
                f"({change:+.1%}, less than {noise:.1%}): it did not help, back to {count} PS of "
                f"{cpu:g} cores, and no more trades (the workers, {before['workers']} of "
                f"{before['worker_cpu']:g} cores before it, are worker_tuning's to grow again)",
                evidence,
                {"min_gain": settings.min_gain, "judge_after_s": settings.judge_after_s},
            )
        ],
    )


def _workers_set_after(context, plan: PlanView, settings: PsScalingSettings) -> bool:
    """A plan applied ``judge_after_s`` or more after ``plan`` set the worker count or
    CPU. A trade's verdict falls due ``judge_after_s`` after it and is made again each
    round while it is the newest PS plan; once a later change of the workers is in the
    speed (worker_tuning giving some back to a busy PS), the speed since is that plan's
    doing too, and under a PS load that grows per step the verdict then took back a
    trade that had paid. A change within the window does not stop the verdict: the
    trade would never be judged."""
    due = plan.applied_at + timedelta(seconds=settings.judge_after_s)
    return any(
        p.status == PlanStatus.applied
        and p.applied_at is not None
        and p.applied_at >= due
        and ROLE_WORKER in p.roles
        and (p.roles[ROLE_WORKER].count is not None or p.roles[ROLE_WORKER].cpu is not None)
        for p in context.plans
    )


def _newest_point(observed, configuration: Configuration, count: int) -> SpeedPoint:
    """The mean speed of the newest ``count`` kept samples at ``configuration`` (fewer when
    it has fewer), with their noise."""
    speeds = [s.steps_per_sec for s, c in observed.measured if c == configuration][-count:]
    mean_speed = sum(speeds) / len(speeds)
    noise = pstdev(speeds) / mean_speed if len(speeds) > 1 else MIN_SAMPLE_NOISE
    return SpeedPoint(configuration, mean_speed, len(speeds), noise)


def _right_size(context, ps_nodes, trainers, recent, settings) -> Proposal | None:
    """The PS of a trade that paid, to the busiest one's peak use over ``max_busy``, when
    that is at most 3/4 of their cores and the trainers do not wait (over
    ``worker_wait`` of their CPU). A trade sizes its PS from the tier's CPU per step in the
    window, which a PS past its knee inflates; below it they use less, and the cores they
    leave serve more workers. Taken back like a shrink when the job got slower."""
    trainer_util = _trainer_utilization(trainers, recent)
    if trainer_util <= settings.worker_wait:
        return None
    request = _ps_request(context, ps_nodes)
    if any(n.cpu != request for n in ps_nodes):
        return None
    peak = max(max(s.cpu for s in recent[n.name]) for n in ps_nodes)
    cpu = max(ceil_to(peak / settings.max_busy, settings.cpu_step), settings.cpu_step)
    if cpu > 0.75 * request:
        return None
    now = len(ps_nodes)
    return Proposal(
        roles={ROLE_PS: RoleSpec(cpu=cpu)},
        reasons=[
            reason(
                NAME,
                f"the trade paid and the trainers keep their pace ({trainer_util:.0%} of their "
                f"CPU); the busiest PS peaks at {peak:.2f} of {request:g} cores: "
                f"{peak:.2f} / {settings.max_busy} = {cpu:g} cores each, PS CPU {request:g} "
                f"-> {cpu:g}, the rest for the workers",
                {
                    "ps_count": now,
                    "ps_cpu_peak": round(peak, 3),
                    "trainer_utilization": round(trainer_util, 3),
                    "new_cpu": cpu,
                    SHRUNK_FROM: {"count": now, "cpu": request},
                },
                {"max_busy": settings.max_busy, "worker_wait": settings.worker_wait},
            )
        ],
    )


def _over_limits(
    context, roles: dict[str, RoleSpec], moved_cpu: float = 0.0
) -> dict[str, tuple[float, float]]:
    """``over_limits``, with each PS moved to more cores than the role's (hot_ps) counted
    at its own size where ``roles`` keep the PS size (a new one relaunches them all at
    it): the guard counts them so, and cuts workers for what the role's size hides. A
    plan that also moves a PS to ``moved_cpu`` cores more than ``roles`` give it counts
    them too."""
    exceeded = dict(over_limits(context, roles))
    limit = context.job.limits.cpu
    ps = roles.get(ROLE_PS, RoleSpec())
    if limit is not None and "cpu" not in exceeded and moved_cpu > 0:
        planned = role_totals(effective_roles(roles, context.job, context.nodes)).cpu
        if planned + moved_cpu > limit + 1e-9:
            exceeded["cpu"] = (planned + moved_cpu, limit)
    if limit is None or "cpu" in exceeded or ps.cpu is not None:
        return exceeded
    role = current_role(ROLE_PS, context.job, context.nodes)
    count = role.count if ps.count is None else ps.count
    extra = sum(
        max(n.cpu - (role.cpu or n.cpu), 0.0)
        for n in context.nodes_of(ROLE_PS)
        if n.index < (count or 0)
    )
    planned = role_totals(effective_roles(roles, context.job, context.nodes)).cpu + extra
    if extra > 0 and planned > limit + 1e-9:
        exceeded["cpu"] = (planned, limit)
    return exceeded
