"""Migration of a parameter server that is hot relative to the others to a larger node."""

from __future__ import annotations

from statistics import median
from typing import ClassVar, NamedTuple

from pydantic import Field

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, Stage
from brain.optimizing import Changes, ContextInput, OptimizerContext, Proposal
from brain.optimizing.roles import current_role, planned_totals
from brain.optimizing.speed_points import STALL_SHARE, stalled_since
from optimizers._common import (
    CpuStepSettings,
    PsChangeSettings,
    ceil_to,
    floor_to,
    mean,
    no_change,
    ps_changed_recently,
    reason,
    resized,
)
from optimizers._ps_knee import move_evidence

NAME = "hot_ps"


class HotPsSettings(CpuStepSettings, PsChangeSettings):
    hot_threshold: float = Field(
        0.8,
        ge=0.1,
        le=1.0,
        description="CPU used / requested at or above which a PS sample is hot.",
    )
    hot_samples: int = Field(
        8,
        ge=1,
        le=100,
        description="A PS is hot when each of its last this-many samples is hot (2 minutes "
        "at a 15 s scrape).",
    )
    relative_factor: float = Field(
        1.5,
        ge=1.0,
        le=10.0,
        description="With several PS, a hot PS is migrated only if its mean utilization is at "
        "least this times the median of the others' (all equally busy: more PS would help, "
        "not a larger one).",
    )
    target_utilization: float = Field(
        0.6, ge=0.1, le=1.0, description="CPU utilization the migrated PS is sized for."
    )
    trainer_wait: float = Field(
        0.7,
        ge=0.05,
        le=1.0,
        description="Trainers (workers and chief) using at most this share of their CPU over "
        "the hot PS's samples wait on it: its use is capped by its request, and at the "
        "trainers' full pace it would need use / their share; it is sized for that.",
    )
    give_back_below: float = Field(
        0.75,
        ge=0.1,
        le=1.0,
        description="A PS moved to a larger size that is no longer hot goes back to its peak "
        "use / target_utilization cores (at least the role's size) when that is at most this "
        "share of what it has: the cores it no longer uses serve the workers.",
    )
    cold_utilization: float = Field(
        0.85,
        ge=0.1,
        le=1.0,
        description="When the job's CPU limit has no room for a hot PS's migration, the "
        "other PS give it cores: each keeps its peak use, scaled to the pace the hot PS's new "
        "cores allow, at most this busy.",
    )
    cold_pinned_at: float = Field(
        0.95,
        ge=0.5,
        le=1.0,
        description="A hot PS takes cores from the other PS only when pinned at its request "
        "(its mean use at least this share of its cores): below, it does not hold the speed, "
        "and a comm-bound job's PS at 83 % took them for nothing.",
    )
    cold_min_gain: float = Field(
        0.1,
        ge=0.0,
        le=4.0,
        description="Cores from the other PS go to a hot PS only when they let it (and the "
        "speed it holds) grow by at least this share: every PS they come from relaunches.",
    )
    max_growth: float = Field(
        4.0,
        ge=1.0,
        le=16.0,
        description="The most one migration multiplies a hot PS's peak use by for the "
        "trainers' full pace (before target_utilization).",
    )


class HotPsOptimizer:
    """Moves the PS that is hot relative to the others to a node with more CPU.

    A PS is hot when its CPU use reached ``hot_threshold`` of its request in each of its
    last ``hot_samples`` samples and, when the job has other PS, its mean utilization is
    ``relative_factor`` times theirs (median). It is migrated with ``peak recent use /
    target_utilization`` cores (rounded up to ``cpu_step``), at most the largest node,
    and not within ``ps_change_interval_s`` of the PS tier's last applied change. A PS
    pinned at its request serves the trainers at their current pace only: when the
    trainers use at most ``trainer_wait`` of their CPU they wait on it, and its peak is
    first scaled to their full pace (``/ their share``, at most ``max_growth`` x).
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(nodes=frozenset({ROLE_PS}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 10}
    Settings: ClassVar[type[HotPsSettings]] = HotPsSettings

    def propose(self, context: OptimizerContext, settings: HotPsSettings) -> Proposal:
        ps_nodes = [ps for ps in context.nodes_of(ROLE_PS) if ps.cpu > 0]
        if not ps_nodes:
            return no_change(NAME, "the job has no PS with a CPU request")
        threshold = {
            "hot_threshold": settings.hot_threshold,
            "hot_samples": settings.hot_samples,
            "relative_factor": settings.relative_factor,
            "target_utilization": settings.target_utilization,
        }
        recent = {ps.name: context.samples_of(ps.name)[-settings.hot_samples :] for ps in ps_nodes}
        short = [name for name, samples in recent.items() if len(samples) < settings.hot_samples]
        if short:
            return no_change(
                NAME,
                f"waiting for {settings.hot_samples} samples of every PS",
                {"ps_without_enough_samples": short},
                threshold,
            )
        utilization = {ps.name: mean([s.cpu for s in recent[ps.name]]) / ps.cpu for ps in ps_nodes}
        hot = [
            ps
            for ps in ps_nodes
            if all(s.cpu >= settings.hot_threshold * ps.cpu for s in recent[ps.name])
        ]
        evidence = {"utilization": {k: round(v, 3) for k, v in utilization.items()}}
        if not hot:
            given = _give_back(context, ps_nodes, recent, settings, threshold)
            if given is not None:
                return given
            return no_change(
                NAME,
                f"no PS at >= {settings.hot_threshold:.0%} CPU in each of its last "
                f"{settings.hot_samples} samples",
                evidence,
                threshold,
            )
        proposal = Proposal()
        interval = ps_changed_recently(NAME, context, settings.ps_change_interval_s)
        single = len(hot) == 1
        for ps in hot:
            others = [u for name, u in utilization.items() if name != ps.name]
            if others and utilization[ps.name] < settings.relative_factor * median(others):
                # A larger PS alone would not help much, but one pinned at its request
                # still holds the speed, and under a full limit the others' spare cores
                # are the only ones it can get (after a first trade they are busier).
                if single and interval is None:
                    wanted = _wanted(context, ps, recent[ps.name], settings)
                    if _take_from_the_others(
                        context, ps, wanted, ps_nodes, recent, settings, threshold, proposal
                    ):
                        continue
                proposal.reasons.append(
                    reason(
                        NAME,
                        f"{ps.name} is busy ({utilization[ps.name]:.0%}) but so are the other "
                        f"PS (median {median(others):.0%}): more PS would help, not a larger one",
                        evidence | {"node": ps.name},
                        threshold,
                    )
                )
                continue
            if interval is not None:
                proposal.reasons.extend(interval.reasons)
                continue
            _migrate(context, ps, recent, ps_nodes if single else [], settings, threshold, proposal)
        return proposal


def _trainer_share(context, since) -> float | None:
    """The trainers' mean CPU used / requested over their samples since ``since``."""
    shares = []
    for n in context.nodes:
        if n.role not in (ROLE_WORKER, ROLE_CHIEF) or n.cpu <= 0:
            continue
        recent = [s.cpu for s in context.samples_of(n.name) if s.ts >= since]
        if recent:
            shares.append(mean(recent) / n.cpu)
    return mean(shares) if shares else None


def _node_evidence(ps, samples) -> dict:
    """A PS's size and the CPU its samples judged used, for a reason's evidence."""
    return {"node": ps.name, "cpu": ps.cpu, "cpu_used": [s.cpu for s in samples]}


class _Wanted(NamedTuple):
    """The cores a hot PS is sized for, how they were reached and the evidence."""

    cpu: float
    why: str
    evidence: dict


def _wanted(context, ps, samples, settings: HotPsSettings) -> _Wanted:
    """``peak / target_utilization`` cores for ``ps``, its peak first scaled to the
    trainers' full pace when they wait on it, at most the largest node."""
    used = max(s.cpu for s in samples)
    evidence = _node_evidence(ps, samples)
    evidence |= move_evidence(context, samples)
    share = _trainer_share(context, samples[0].ts)
    demand, why = used, f"peak {used:.2f}"
    if share is not None and share <= settings.trainer_wait:
        factor = min(1 / max(share, 1e-9), settings.max_growth)
        demand = used * factor
        why = (
            f"peak {used:.2f}; the trainers use {share:.0%} of their CPU, waiting on it: "
            f"x {factor:.2f} at their full pace = {demand:.2f}"
        )
        evidence |= {"trainer_utilization": round(share, 3), "cpu_demand": round(demand, 3)}
    cpu = min(
        ceil_to(demand / settings.target_utilization, settings.cpu_step), context.node_max.cpu
    )
    hot_why = (
        f"{ps.name} used >= {settings.hot_threshold:.0%} of its {ps.cpu} cores in its last "
        f"{settings.hot_samples} samples ({why})"
    )
    return _Wanted(cpu, hot_why, evidence)


def _migrate(context, ps, recent, ps_nodes, settings: HotPsSettings, threshold, proposal) -> None:
    """``ps`` migrated to the cores it wants (``_wanted``); when the job's CPU limit has
    no room for them, to what the other PS of ``ps_nodes`` can give
    (``_take_from_the_others``)."""
    wanted = _wanted(context, ps, recent[ps.name], settings)
    cap = context.node_max.cpu
    if wanted.cpu <= ps.cpu:
        proposal.reasons.append(
            reason(
                NAME,
                f"{ps.name} is hot but already has {ps.cpu} cores, the largest node allows "
                f"{cap}: cannot grow",
                wanted.evidence,
                threshold | {"node_max_cpu": cap},
            )
        )
        return
    if _take_from_the_others(context, ps, wanted, ps_nodes, recent, settings, threshold, proposal):
        return
    proposal.migrate.append(resized(ps, cpu=wanted.cpu))
    proposal.reasons.append(
        reason(
            NAME,
            f"{wanted.why}: migrate to {wanted.cpu} cores "
            f"(/ {settings.target_utilization}, at most {cap})",
            wanted.evidence | {"new_cpu": wanted.cpu},
            threshold | {"node_max_cpu": cap},
        )
    )


def _take_from_the_others(
    context, ps, wanted: _Wanted, ps_nodes, recent, settings: HotPsSettings, threshold, proposal
) -> bool:
    """Whether ``proposal`` got ``ps`` grown with the other PS's cores (``_from_the_others``)."""
    if wanted.cpu <= ps.cpu:
        return False
    traded = _from_the_others(context, ps, wanted.cpu, ps_nodes, recent, settings)
    if traded is None:
        return False
    changes, message, trade_evidence = traded
    proposal.migrate.extend(changes)
    proposal.reasons.append(
        reason(
            NAME,
            f"{wanted.why}: {wanted.cpu} cores wanted; {message}",
            wanted.evidence | trade_evidence,
            threshold
            | {
                "cold_utilization": settings.cold_utilization,
                "cold_min_gain": settings.cold_min_gain,
            },
        )
    )
    return True


def _give_back(context, ps_nodes, recent, settings: HotPsSettings, threshold) -> Proposal | None:
    """PS moved to more cores than the role's that are no longer hot, back to their peak
    use over ``target_utilization`` (at least the role's size, and at most
    ``give_back_below`` of what they have); None when there are none, while the speed
    stalls, or within the PS tier's cooldown."""
    role_cpu = current_role(ROLE_PS, context.job, context.nodes).cpu
    if role_cpu is None:
        return None
    since = min(s.ts for samples in recent.values() for s in samples)
    if stalled_since(context, since, STALL_SHARE):
        # Training stalled (data loading, a checkpoint, a PS down): the PS idle with it,
        # and their use says nothing of what they need once it resumes.
        return None
    proposal = Proposal()
    for ps in ps_nodes:
        if ps.cpu <= role_cpu + 1e-9:
            continue
        peak = max(s.cpu for s in recent[ps.name])
        cpu = max(ceil_to(peak / settings.target_utilization, settings.cpu_step), role_cpu)
        if cpu > settings.give_back_below * ps.cpu:
            continue
        proposal.migrate.append(resized(ps, cpu=cpu))
        proposal.reasons.append(
            reason(
                NAME,
                f"{ps.name}, moved to {ps.cpu:g} cores, is no longer hot: its peak use "
                f"{peak:.2f} / {settings.target_utilization} = {cpu:g} cores (at least the "
                f"role's {role_cpu:g}), {peak / cpu:.0%} busy at its peak: migrate to {cpu:g} "
                f"cores, the rest back to the job",
                _node_evidence(ps, recent[ps.name]) | {"new_cpu": cpu},
                threshold | {"give_back_below": settings.give_back_below},
            )
        )
    if not proposal.migrate:
        return None
    interval = ps_changed_recently(NAME, context, settings.ps_change_interval_s)
    return interval if interval is not None else proposal


def _from_the_others(context, hot, wanted, ps_nodes, recent, settings: HotPsSettings):
    """Cores for a hot PS pinned at its request (``cold_pinned_at``) from the other PS,
    when the job's CPU limit has too little room for ``wanted``: ``(migrations, message,
    evidence)``, or None.

    The hot PS holds the speed, so giving it ``g`` times its cores lets the speed grow
    up to ``g`` times, and each other PS then needs its peak use times ``g`` over
    ``cold_utilization``. The largest ``g`` whose cores fit the room and what the others
    free: ``(room + their cores + the hot PS's) / (the hot PS's + their peaks /
    cold_utilization)``, at most ``wanted / its cores`` and at most what leaves every
    other PS within ``cold_utilization`` of its cores; none below ``1 + cold_min_gain``.
    A hot-ps job ended at 0.79 of its best with its hot PS at 100 %, the limit full and
    the PS tier as a whole at 47 %."""
    limit = context.job.limits.cpu
    others = [ps for ps in ps_nodes if ps.name != hot.name]
    pinned = mean([s.cpu for s in recent[hot.name]]) >= settings.cold_pinned_at * hot.cpu
    if limit is None or not others or not pinned:
        return None
    room = max(limit - planned_totals({}, context.job, context.nodes).cpu, 0.0)
    if wanted - hot.cpu <= room + 1e-9:
        return None
    peaks = {ps.name: max(s.cpu for s in recent[ps.name]) for ps in others}
    spare = sum(ps.cpu for ps in others)
    need = sum(peaks.values()) / settings.cold_utilization
    # No other PS is left busier than cold_utilization at the new pace, shrunk or not.
    busiest = min(ps.cpu * settings.cold_utilization / max(peaks[ps.name], 1e-9) for ps in others)
    growth = min((room + spare + hot.cpu) / (hot.cpu + need), wanted / hot.cpu, busiest)
    if growth < 1 + settings.cold_min_gain:
        return None
    step = settings.cpu_step
    smaller = {
        ps.name: min(ceil_to(peaks[ps.name] * growth / settings.cold_utilization, step), ps.cpu)
        for ps in others
    }
    freed = sum(ps.cpu - smaller[ps.name] for ps in others)
    # The others' sizes are rounded up: the hot PS takes what is left, rounded down.
    cpu = min(floor_to(hot.cpu + room + freed, step), wanted)
    if cpu < hot.cpu * (1 + settings.cold_min_gain):
        return None
    given = [ps for ps in others if smaller[ps.name] < ps.cpu - 1e-9]
    changes = [resized(hot, cpu=cpu)] + [resized(ps, cpu=smaller[ps.name]) for ps in given]
    message = (
        f"the CPU limit {limit:g} leaves {room:.2f} cores, so the other PS (peaks "
        + ", ".join(f"{peaks[ps.name]:.2f}" for ps in others)
        + f") give theirs: {hot.name} {hot.cpu:g} -> {cpu:g} cores, and at its pace "
        f"(x{cpu / hot.cpu:.2f}) each other PS at most {settings.cold_utilization:.0%} busy: "
        + ", ".join(f"{ps.name} {ps.cpu:g} -> {smaller[ps.name]:g}" for ps in given)
    )
    evidence = {
        "new_cpu": cpu,
        "cpu_room": round(room, 3),
        "other_ps_peaks": {k: round(v, 3) for k, v in peaks.items()},
        "other_ps_cpu": {ps.name: smaller[ps.name] for ps in given},
    }
    return changes, message, evidence
