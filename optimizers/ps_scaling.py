"""More parameter servers while training runs, when the PS tier as a whole is the bottleneck."""

from __future__ import annotations

import math
from statistics import median
from typing import ClassVar

from pydantic import Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import Changes, ContextInput, NodeView, OptimizerContext, Proposal
from brain.optimizing.roles import current_role
from optimizers._common import (
    PsChangeSettings,
    mean,
    no_change,
    over_limits,
    ps_changed_recently,
    reason,
)

NAME = "ps_scaling"


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
        "they are waiting on the PS.",
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
    reverse_after_s: float = Field(
        600,
        ge=0,
        le=7 * 86400,
        description="No PS added within this many seconds of an applied plan that cut the "
        "PS count (an estimate that found fewer enough): adding them back so soon reverses "
        "it, two restarts for nothing. worker_tuning's cooldown_s is the same window.",
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
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ROLE_PS}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 20}
    Settings: ClassVar[type[PsScalingSettings]] = PsScalingSettings

    def propose(self, context: OptimizerContext, settings: PsScalingSettings) -> Proposal:
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
            exclude={"ps_port", "ps_change_interval_s", "reverse_after_s"}
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
        ps_util = {n.name: mean([s.cpu for s in recent[n.name]]) / n.cpu for n in ps_nodes}
        tier_util = mean(list(ps_util.values()))
        trainer_util = mean([mean([s.cpu for s in recent[n.name]]) / n.cpu for n in trainers])
        evidence = {
            "ps_utilization": {k: round(v, 3) for k, v in ps_util.items()},
            "ps_tier_utilization": round(tier_util, 3),
            "trainer_utilization": round(trainer_util, 3),
        }
        if tier_util < settings.saturation:
            return no_change(
                NAME,
                f"PS tier at {tier_util:.0%} CPU, below {settings.saturation:.0%}: not saturated",
                evidence,
                threshold,
            )
        hot = _hot_alone(ps_util, settings.relative_factor)
        if hot is not None:
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
            # ps_cpu_threshold): while the limits have room, PS for the load of today at
            # the target utilization make room for more workers.
            return _make_room(
                context, ps_nodes, recent, trainer_util, evidence, threshold, settings
            )
        return _add_ps(context, ps_nodes, recent, trainer_util, evidence, threshold, settings)


def _count_cut_recently(context: OptimizerContext, window_s: float) -> Proposal | None:
    """No change while the newest applied plan that set the PS count cut it (below the
    count the applied plan before it set) less than ``window_s`` ago."""
    counted = sorted(
        (p.applied_at, p.id, p.roles[ROLE_PS].count)
        for p in context.plans
        if p.status == PlanStatus.applied
        and p.applied_at is not None
        and p.roles.get(ROLE_PS) is not None
        and p.roles[ROLE_PS].count is not None
    )
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
    request = current_role(ROLE_PS, context.job, context.nodes).cpu or ps_nodes[0].cpu
    used = sum(mean([s.cpu for s in recent[n.name]]) for n in ps_nodes)
    # The PS serve the trainers' current pace; at full pace they would need this much.
    demand = used / max(trainer_util, 0.05)
    wanted = math.ceil(demand / (request * settings.target_utilization) - 1e-9)
    count = min(max(wanted, now + 1), now + settings.step)
    hosts, unnamed = _ps_hosts(context, ps_nodes, count, settings.ps_port)
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(used, 3),
        "ps_cpu_demand": round(demand, 3),
        "ps_cpu_request": request,
    }
    if unnamed:
        evidence["ps_hosts_unknown"] = unnamed
    return Proposal(
        roles={ROLE_PS: RoleSpec(count=count)},
        ps_hosts=hosts,
        reasons=[
            reason(
                NAME,
                f"PS tier at {evidence['ps_tier_utilization']:.0%} CPU while the trainers use "
                f"{trainer_util:.0%} of theirs and speed stalled "
                f"({evidence['speed_change']:+.1%}): PS demand at full pace "
                f"{used:.2f} / {trainer_util:.2f} = {demand:.2f} cores, at "
                f"{settings.target_utilization:.0%} of {request:g} cores each -> PS {now} -> "
                f"{count} (at most +{settings.step})",
                evidence,
                threshold,
            )
        ],
    )


def _make_room(context, ps_nodes, recent, trainer_util, evidence, threshold, settings) -> Proposal:
    now = len(ps_nodes)
    request = current_role(ROLE_PS, context.job, context.nodes).cpu or ps_nodes[0].cpu
    used = sum(mean([s.cpu for s in recent[n.name]]) for n in ps_nodes)
    wanted = math.ceil(used / (request * settings.target_utilization) - 1e-9)
    tier = evidence["ps_tier_utilization"]
    waiting = (
        f"PS tier at {tier:.0%} CPU, the trainers at {trainer_util:.0%} of theirs "
        f"(> {settings.worker_wait:.0%}: not waiting on the PS)"
    )
    evidence = evidence | {
        "ps_count": now,
        "ps_cpu_used": round(used, 3),
        "ps_cpu_request": request,
    }
    for count in range(min(max(wanted, now + 1), now + settings.step), now, -1):
        roles = {ROLE_PS: RoleSpec(count=count)}
        if not over_limits(context, roles):
            break
    else:
        return no_change(
            NAME, f"{waiting}; one more PS would exceed the job's limits", evidence, threshold
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
    named after the existing ones' ``<prefix><index>``; PS named otherwise make the list
    unknown (returned second, and ``ps_hosts`` is left empty)."""
    unnamed = [n.name for n in ps_nodes if not n.name.endswith(f"-{n.index}")]
    if unnamed:
        return [], unnamed
    first = ps_nodes[0]
    prefix = first.name[: -len(str(first.index))]
    names = [n.name for n in ps_nodes]
    next_index = max(n.index for n in ps_nodes) + 1
    names += [f"{prefix}{next_index + i}" for i in range(count - len(ps_nodes))]
    domain = f".{context.job.namespace}.svc" if context.job.namespace else ""
    return [f"{name}{domain}:{port}" for name in names], []
