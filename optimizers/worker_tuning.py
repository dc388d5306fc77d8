"""Workers: climb the job's own fitted throughput curve, and take back what did not pay."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_PS, ROLE_WORKER, PlanStatus, RoleSpec, Stage
from brain.optimizing import (
    Changes,
    ContextInput,
    OptimizerContext,
    PlanView,
    Proposal,
)
from brain.optimizing.roles import current_role, exceeded_limits, planned_totals
from brain.optimizing.speed_fit import Configuration, Prediction, SpeedFit, SpeedPoint, fit
from brain.optimizing.speed_points import (
    Observed,
    during,
    observe,
    stalled_periods,
    trainers_now,
)
from optimizers._common import cooling_down, floor_to, mean, no_change, reason
from optimizers._ps_cost import cost_growing, cost_ratios

NAME = "worker_tuning"
# CPU granularity of worker sizes this optimizer sets (cores): CPU_STEP, and FINE_CPU_STEP
# below FINE_BELOW cores, so that a step is at most about 5 % of a worker. In tenths of a
# core, workers of about a core made smaller to fit more round down below their use, or
# keep up to a tenth of their cores idle.
CPU_STEP = 0.1
FINE_CPU_STEP = 0.05
FINE_BELOW = 2.0
# Evidence keys: a take-back's worker count and CPU; a change's configuration before and
# the speed the fit predicted for it; a step towards the estimate's worker count.
TAKEN_BACK_TO = "taken_back_to"
TAKEN_BACK_CPU = "taken_back_cpu"
CPU_BEFORE = "worker_cpu_before"
WORKER_CPU = "worker_cpu"
COUNT_BEFORE = "worker_count_before"
PREDICTED = "predicted_steps_per_sec"
PREDICTED_LOW = "predicted_low"
# Evidence key: the workers were made smaller so that one more PS fits (once a job).
ROOM_FOR_A_PS = "room_for_a_ps"
# A CPU sample at this share of the request or more is the worker held at its request.
_AT_REQUEST = 0.99
# Worker sizes a sure fit may trade count for, as shares of today's: smaller workers,
# more of them, under the same limit.
_TRADE_SIZES = (1.0, 0.75, 0.5, 0.33, 0.25)
# Worker counts a sure jump tries past 10 are this factor apart.
_COUNT_STEP = 1.1


class WorkerTuningSettings(BaseModel):
    ps_cpu_threshold: float = Field(
        0.9,
        ge=0.1,
        le=1.0,
        description="Busiest PS CPU used / requested below which workers may grow. Above "
        "ps_scaling's max_busy (0.85), the headroom the PS rules size a tier for: at 0.8, a "
        "tier they left between 80 % and 85 % busy under a full CPU limit held the workers "
        "while no PS rule acted either.",
    )
    ps_samples: int = Field(
        3, ge=1, le=100, description="Recent samples per PS averaged for its CPU use."
    )
    step: int = Field(
        2,
        ge=1,
        le=64,
        description="Workers one plan may add past the most the job has run, at least (see "
        "explore_factor): the fit is unsure there.",
    )
    explore_factor: float = Field(
        1.5,
        ge=1.0,
        le=8.0,
        description="One plan grows the trainers to at most this times the most the job has "
        "run (or by step, if more): bounded exploration where the fit is unsure.",
    )
    min_gain: float = Field(
        0.01,
        ge=0.0,
        le=1.0,
        description="Relative speed change below which a change counts as none (the speed's "
        "noise; two standard errors of the measured difference when more).",
    )
    min_core_elasticity: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="Speed per core: a change that adds cores must be predicted to gain at "
        "least this times their relative increase (+30 % cores at 0.1: +3 % speed) to be "
        "proposed. Once measured it is judged against what the fit predicted, not by this.",
    )
    min_speed_samples: int = Field(
        3,
        ge=1,
        le=1000,
        description="Speed samples needed at the current configuration to judge it (stalls "
        "and samples while pods restart left out).",
    )
    settle_s: float = Field(
        90,
        ge=0,
        le=3600,
        description="Speed samples within this many seconds of an applied change are left out "
        "of the fit: pods restart.",
    )
    stall_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="A speed sample below this share of its configuration's median (0: "
        "stopped) is a stall (data loading, a checkpoint, a PS down), left out of the fit and "
        "of every verdict.",
    )
    cpu_bound_at: float = Field(
        0.95,
        ge=0.1,
        le=1.0,
        description="Workers using at least this fraction of their CPU request, held at it "
        "in three samples of four, are CPU-bound: they get more CPU while the limits have "
        "room.",
    )
    cpu_bound_samples: int = Field(
        8,
        ge=1,
        le=100,
        description="Recent samples per worker in which a CPU-bound worker is held at its "
        "request (three of four): a worker sized to what it needs reaches it at times too.",
    )
    cpu_growth: float = Field(
        1.5, ge=1.05, le=4.0, description="Factor one plan raises a CPU-bound worker's CPU by."
    )
    worker_samples: int = Field(
        3,
        ge=1,
        le=100,
        description="Recent samples per worker averaged for the CPU the workers use.",
    )
    min_cpu_in_use_gain: float = Field(
        0.05,
        ge=0.0,
        le=1.0,
        description="When one more worker fits only if every worker gets less CPU, the CPU "
        "the workers use must grow by at least this.",
    )
    judge_within_s: float = Field(
        1800,
        ge=0,
        le=86400,
        description="A change of worker_tuning's is judged (kept or taken back) while it is "
        "younger than this; later, other changes and a drifting load blur the comparison.",
    )
    trim_wait: float = Field(
        0.7,
        ge=0.05,
        le=1.0,
        description="With the busiest PS at ps_cpu_threshold or more and the job's CPU limit "
        "leaving it no room to grow, workers using at most this share of their CPU wait on "
        "the PS: some are given back, so the PS can grow.",
    )
    trim_target: float = Field(
        0.85,
        ge=0.1,
        le=1.0,
        description="Workers given back keep the rest at most this busy (CPU used / "
        "requested at today's speed): the PS stay the bottleneck, the speed holds. Also how "
        "busy every PS must be before busy workers are made smaller for one more PS "
        "(room_busy).",
    )
    room_busy: float = Field(
        0.95,
        ge=0.1,
        le=1.0,
        description="With the busiest PS at ps_cpu_threshold or more, every PS at "
        "trim_target or more and the CPU limit leaving no room for one more PS (nor ps_room "
        "for the busiest to grow), workers using more than "
        "trim_wait of their CPU are made smaller, once, so that one more PS of the role's "
        "size fits, when they would use at most this share of their smaller CPU at "
        "today's speed.",
    )
    ps_room: float = Field(
        0.67,
        ge=0.0,
        le=4.0,
        description="Cores the CPU limit must leave free for the busiest PS to grow, as a "
        "share of its cores (hot_ps moves a hot PS to its use / 0.6: +67 %).",
    )
    sure_within: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="A prediction whose plausible curves differ by at most this share of it "
        "is sure: past explore_factor, and with smaller workers, the climb "
        "goes in one plan to the configuration the fit predicts best per core (the chain of "
        "min_core_elasticity), steps only where it is unsure. Fewer cores than today's "
        "must be predicted to gain at least this.",
    )
    sure_points: int = Field(
        3,
        ge=2,
        le=100,
        description="Configurations the job must have measured before its fit counts as "
        "sure anywhere it has not run.",
    )
    cooldown_s: float = Field(
        600,
        ge=0,
        le=86400,
        description="No worker change within this many seconds of an applied one (from "
        "its applied_at, on the job's clock).",
    )


@dataclass(frozen=True)
class _Job:
    """What the decisions read: the job now, its measured points and their fit."""

    context: OptimizerContext
    settings: WorkerTuningSettings
    observed: Observed
    fitted: SpeedFit | None
    workers: int
    chiefs: int
    now: Configuration
    speed: SpeedPoint

    def configuration(self, workers: int, cpu: float) -> Configuration:
        return Configuration(workers + self.chiefs, cpu, self.now.ps_cpu, self.now.ps_count)

    def predict(self, configuration: Configuration) -> Prediction:
        if self.fitted is None:
            s = self.speed.steps_per_sec
            return Prediction(s, s, s)
        return self.fitted.predict(configuration)

    @cached_property
    def cpu_used(self) -> float | None:
        """The cores a worker uses (``_worker_cpu_used``), read once per round: several
        decisions weigh it."""
        return _worker_cpu_used(self.context, self.settings)


class WorkerTuningOptimizer:
    """Climbs the job's own throughput curve with the workers' count and CPU.

    Every speed sample (stalls and restarts left out) is a point of the configuration it
    measured; the points are fitted to a throughput curve
    (``brain.optimizing.speed_fit``) that predicts the speed of configurations not run
    yet, between a low and a high where it is unsure. The next configuration is the one
    with the best predicted speed per core within the limits: more workers (at most
    ``explore_factor`` times the most the job ran), more CPU per worker when they are
    CPU-bound, or one more worker with every worker a little smaller when one more of
    today's size does not fit. A step is taken when its optimistic prediction gains at
    least ``min_core_elasticity`` times the cores it adds. Where the fit is sure
    (``sure_within``), any count and any worker size down to the smallest the job ran
    is a candidate, judged by its prediction: one plan jumps there. No candidate counts
    on more than the busiest PS serves, nor on more than its trainers' cores at today's
    steps per trainer core in use, and nothing grows while the busiest PS is at
    ``ps_cpu_threshold`` or more.

    Once a change of its own is measured (after ``cooldown_s``), it is judged against
    the configuration before it and what the fit predicted for it: a change that made
    the job slower beyond the noise, or that added more cores than the noise and brought
    neither a gain beyond the noise nor the least gain the fit was sure of, is taken
    back to that configuration, count and CPU, and the job is not grown past it again.
    Changes of other optimizers (the estimate's, a short cluster's) are not judged:
    their points enter the fit.

    When the guard's step bound cut the applied estimate's worker count, it first asks
    for the rest (as many as the limits hold).
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ROLE_WORKER}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 40}
    Settings: ClassVar[type[WorkerTuningSettings]] = WorkerTuningSettings

    def propose(self, context: OptimizerContext, settings: WorkerTuningSettings) -> Proposal:
        cooling = cooling_down(
            NAME, context, _sets_workers, settings.cooldown_s, "the worker count"
        )
        if cooling is not None:
            return cooling
        observed = observe(context, settings.settle_s, settings.stall_share)
        workers, chiefs = trainers_now(context)
        cpu = current_role(ROLE_WORKER, context.job, context.nodes).cpu or 0.0
        latest = observed.current
        now = Configuration(
            workers + chiefs,
            float(cpu),
            latest.ps_cpu if latest is not None else 0.0,
            latest.ps_count if latest is not None else 0,
        )
        point = observed.point(now)
        if point is None and latest is not None and not _reported(context, now.trainers):
            # A master that counts its trainers otherwise: the newest configuration measured.
            point = observed.point(latest)
        left_out = {"stalled_samples": observed.stalled, "settling_samples": observed.settling}
        if point is None or point.samples < settings.min_speed_samples:
            return no_change(
                NAME,
                f"waiting for {settings.min_speed_samples} speed samples at the current "
                "configuration (stalls and restarts left out)",
                {"speed_samples": 0 if point is None else point.samples}
                | {k: v for k, v in left_out.items() if v},
                {"min_speed_samples": settings.min_speed_samples},
            )
        if point.configuration != now:
            now = point.configuration
        job = _Job(context, settings, observed, fit(observed.points), workers, chiefs, now, point)
        verdict = _verdict(job)
        if verdict is not None:
            return verdict
        ps_evidence: dict[str, object] = {}
        utilization = None
        if context.nodes_of(ROLE_PS) or ROLE_PS in context.job.roles:
            ps_load = _busiest_ps(context, settings.ps_samples)
            if ps_load is None:
                return no_change(NAME, "no PS usage samples: cannot judge PS headroom")
            busiest, utilization = ps_load
            ps_evidence = {"busiest_ps": busiest, "ps_cpu_utilization": round(utilization, 3)}
            if utilization >= settings.ps_cpu_threshold:
                given_back = _give_back(job, busiest, ps_evidence)
                if given_back is not None:
                    return given_back
                smaller = _smaller_for_a_ps(job, busiest, ps_evidence)
                if smaller is not None:
                    return smaller
                return no_change(
                    NAME,
                    f"busiest PS {busiest} at {utilization:.0%} CPU, threshold "
                    f"{settings.ps_cpu_threshold:.0%}: the PS hold the speed, workers stay",
                    ps_evidence,
                    {"ps_cpu_threshold": settings.ps_cpu_threshold},
                )
        return _climb(job, ps_evidence, utilization)


# Judging the last change ------------------------------------------------------------


def _verdict(job: _Job) -> Proposal | None:
    """A take-back of worker_tuning's last applied change when it did not pay; None when
    it paid, or there is none to judge yet."""
    context, settings = job.context, job.settings
    last = _last_change(context.plans)
    if last is None:
        return None
    plan, evidence = last
    if TAKEN_BACK_TO in evidence:
        return None
    if (context.now - plan.applied_at).total_seconds() > settings.judge_within_s:
        return None  # judged when it was measured; the PS load may have moved since
    before = job.observed.before(job.now)
    # Only the workers changed between the two, or it is not this change's doing: the PS
    # tier's cores and count (8 PS of 0.9 cores and 2 of 3.7 hold about the same cores).
    if (
        before is None
        or before == job.now
        or (before.ps_cpu, before.ps_count) != (job.now.ps_cpu, job.now.ps_count)
    ):
        return None
    previous = job.observed.point(before)
    if previous is None or previous.samples < settings.min_speed_samples:
        return None
    gain = job.speed.steps_per_sec / previous.steps_per_sec - 1
    noise = max(
        settings.min_gain,
        2 * math.hypot(job.speed.relative_stderr, previous.relative_stderr),
    )
    added_cores = _cores(job.now) / _cores(before) - 1
    # What the fit counted on when it proposed the change: the least of its plausible
    # curves (the prediction itself where the plan gives no band), as a gain.
    least = evidence.get(PREDICTED_LOW, evidence.get(PREDICTED))
    promised = least / previous.steps_per_sec - 1 if isinstance(least, int | float) else None
    # Taken back only when sure: the job got slower beyond the noise, or the change added
    # cores and got neither a gain beyond the noise nor, within it, the least gain the
    # fit was sure of (where it was not sure of one, only a measured gain keeps them).
    # Cores fewer than the noise could not show a gain beyond it even fully used: such a
    # change (smaller workers rounded up) is judged by its speed alone. A change whose
    # speed rose with its cores, within the noise, paid for them: speed per core held.
    slower = gain < -noise
    reached = promised is not None and promised > 0 and gain + noise >= promised
    kept_pace = added_cores <= noise or gain + noise >= added_cores
    if not slower and (kept_pace or gain >= noise or reached):
        return None
    count = evidence.get(COUNT_BEFORE, max(before.trainers - job.chiefs, 1))
    minimum = context.job.bounds_of(ROLE_WORKER).min_count
    if minimum is not None:
        count = max(count, minimum)
    cpu = evidence.get(CPU_BEFORE, before.trainer_cpu)
    expected = (
        "" if promised is None else f" (the fit predicted at least {least:.2f}, {promised:+.1%})"
    )
    why = "slower" if slower else "no faster beyond the noise for the cores it added"
    message = (
        f"{_describe(before)} -> {_describe(job.now)} changed speed "
        f"{previous.steps_per_sec:.2f} -> {job.speed.steps_per_sec:.2f} steps/s, "
        f"{gain:+.1%} (+-{noise:.1%}){expected} for {added_cores:+.0%} cores; {why}"
    )
    measured = {
        "steps_per_sec": round(job.speed.steps_per_sec, 4),
        "previous_steps_per_sec": round(previous.steps_per_sec, 4),
        "speed_gain": round(gain, 4),
        "core_change": round(added_cores, 4),
        "workers": job.now.trainers,
        "previous_workers": before.trainers,
    }
    threshold: dict[str, object] = {"min_gain": settings.min_gain}
    if promised is not None:
        threshold["predicted_gain"] = round(promised, 4)
    if minimum is not None:
        threshold["min_count"] = minimum
    back = RoleSpec(
        count=None if count == job.workers else count,
        cpu=None if cpu == job.now.trainer_cpu else cpu,
    )
    if back == RoleSpec():
        return no_change(
            NAME, f"{message}: the job's min_count {minimum} keeps them", measured, threshold
        )
    return Proposal(
        roles={ROLE_WORKER: back},
        reasons=[
            reason(
                NAME,
                f"{message}: it did not pay, back to {count} workers of {cpu:g} cores each",
                measured
                | {
                    "worker_count": job.workers,
                    TAKEN_BACK_TO: count,
                    TAKEN_BACK_CPU: cpu,
                    COUNT_BEFORE: job.workers,
                    CPU_BEFORE: job.now.trainer_cpu,
                },
                threshold,
            )
        ],
    )


def _last_change(plans: Sequence[PlanView]) -> tuple[PlanView, dict] | None:
    """The newest applied plan that set the workers, with worker_tuning's evidence in
    it, when worker_tuning made that change (None otherwise)."""
    applied = [
        p for p in plans if p.status == PlanStatus.applied and p.applied_at and _sets_workers(p)
    ]
    if not applied:
        return None
    newest = max(applied, key=lambda p: p.applied_at)
    spec = newest.roles[ROLE_WORKER]
    for r in newest.reasons:
        if r.optimizer != NAME or ("added" not in r.evidence and TAKEN_BACK_TO not in r.evidence):
            continue
        # Another optimizer may have overridden the count or size in the same plan (a
        # short cluster took workers back): then the change is not worker_tuning's.
        count = r.evidence.get(TAKEN_BACK_TO)
        if count is None and isinstance(r.evidence.get(COUNT_BEFORE), int):
            count = r.evidence[COUNT_BEFORE] + r.evidence["added"]
        cpu = r.evidence.get(TAKEN_BACK_CPU, r.evidence.get(WORKER_CPU))
        if (count is not None and spec.count is not None and spec.count != count) or (
            cpu is not None and spec.cpu is not None and spec.cpu != cpu
        ):
            return None
        return newest, r.evidence
    return None


# Choosing the next configuration ----------------------------------------------------


@dataclass(frozen=True)
class _Candidate:
    workers: int
    cpu: float
    configuration: Configuration
    prediction: Prediction
    why: str
    # Predicted within sure_within: judged by its prediction, not its optimistic high.
    sure: bool = False

    @property
    def hoped(self) -> float:
        """The speed the climb counts on: the prediction where the fit is sure, else its
        optimistic high (bounded exploration)."""
        return self.prediction.steps_per_sec if self.sure else self.prediction.high


def _climb(job: _Job, ps_evidence: dict, utilization: float | None) -> Proposal:
    context, settings = job.context, job.settings
    # The busiest PS at today's cores serves at most today's speed over its utilization.
    cap = job.speed.steps_per_sec / utilization if utilization else math.inf
    # Trainers run at most in proportion to the cores they use: today's steps per core
    # in use bound any configuration, whatever a curve fitted across a PS change says.
    used = job.cpu_used
    per_core = job.speed.steps_per_sec / (job.now.trainers * used) if used else None
    candidates = [
        _paced(_capped(c, cap), per_core)
        for c in _more_workers(job) + _more_cpu(job) + _sure_jumps(job)
    ]
    chosen = None
    base_speed, base_cores = job.speed.steps_per_sec, _cores(job.now)
    for candidate in sorted(candidates, key=lambda c: (_cores(c.configuration), -c.hoped)):
        added = _cores(candidate.configuration) / base_cores - 1
        needed = max(settings.min_gain, settings.min_core_elasticity * added)
        if candidate.sure and added <= 0:
            # Fewer cores for more speed rests on the curve's form alone: only a gain
            # beyond what its curves disagree by is worth the cores' certain loss.
            needed = max(needed, settings.sure_within)
        if candidate.hoped >= base_speed * (1 + needed):
            chosen = candidate
            base_speed = max(candidate.prediction.steps_per_sec, base_speed)
            base_cores = _cores(candidate.configuration)
    evidence = ps_evidence | _fit_evidence(job)
    if chosen is None:
        full = _exceeds(context, {ROLE_WORKER: RoleSpec(count=job.workers + 1)})
        smaller = _smaller_to_fit(job, evidence) if full else None
        if smaller is not None:
            return smaller
        # Sure configurations with fewer cores that are not faster leave no growth unsaid.
        growth = any(_cores(c.configuration) > _cores(job.now) for c in candidates)
        return _stay(job, evidence, growth)
    p = chosen.prediction
    spec = RoleSpec(
        count=None if chosen.workers == job.workers else chosen.workers,
        cpu=None if chosen.cpu == job.now.trainer_cpu else chosen.cpu,
    )
    limit = current_role(ROLE_WORKER, context.job, context.nodes).cpu_limit
    if spec.cpu is not None and limit is not None and limit < spec.cpu:
        spec = RoleSpec(count=spec.count, cpu=spec.cpu, cpu_limit=spec.cpu)
    return Proposal(
        roles={ROLE_WORKER: spec},
        reasons=[
            reason(
                NAME,
                f"{_describe(job.now)} at {job.speed.steps_per_sec:.2f} steps/s; {chosen.why}: "
                f"the fitted curve predicts {p.steps_per_sec:.2f} steps/s "
                f"(between {p.low:.2f} and {p.high:.2f}) at {_describe(chosen.configuration)}, "
                f"{_cores(chosen.configuration) / _cores(job.now) - 1:+.0%} cores: workers "
                f"{job.workers} x {job.now.trainer_cpu:g} -> {chosen.workers} x {chosen.cpu:g} "
                "cores",
                evidence
                | {
                    "worker_count": job.workers,
                    "added": chosen.workers - job.workers,
                    COUNT_BEFORE: job.workers,
                    CPU_BEFORE: job.now.trainer_cpu,
                    WORKER_CPU: chosen.cpu,
                    PREDICTED: round(p.steps_per_sec, 4),
                    PREDICTED_LOW: round(p.low, 4),
                    "predicted_high": round(p.high, 4),
                },
                {
                    "min_core_elasticity": settings.min_core_elasticity,
                    "min_gain": settings.min_gain,
                    "explore_factor": settings.explore_factor,
                    "step": settings.step,
                },
            )
        ],
    )


def _stay(job: _Job, evidence: dict, had_candidates: bool) -> Proposal:
    """No change, and why: nothing predicted to pay, or nothing more allowed."""
    context, settings = job.context, job.settings
    here = f"{_describe(job.now)} at {job.speed.steps_per_sec:.2f} steps/s"
    maximum = context.job.bounds_of(ROLE_WORKER).max_count
    ceiling = _ceiling(context.plans, TAKEN_BACK_TO)
    if had_candidates:
        return no_change(
            NAME,
            f"{here}: no configuration within the limits is predicted to gain "
            f"{settings.min_core_elasticity:g} x the cores it adds",
            evidence,
            {"min_core_elasticity": settings.min_core_elasticity, "min_gain": settings.min_gain},
        )
    if maximum is not None and job.workers >= maximum:
        return no_change(
            NAME,
            f"{here}; {job.workers} workers, the job's max_count is {maximum}: no more workers",
            evidence,
            {"max_count": maximum},
        )
    if ceiling is not None and job.workers >= ceiling:
        return no_change(
            NAME,
            f"{here}; more than {ceiling:g} workers did not pay earlier: staying at {job.workers}",
            evidence | {"ceiling": ceiling},
        )
    return no_change(NAME, f"{here}; one more worker would exceed the job's limits", evidence, {})


def _reach(job: _Job) -> int:
    """The most workers one plan may grow to where the fit is unsure: ``explore_factor``
    x the most trainers the job ran (at least ``step`` more), within the job's
    ``max_count`` and any ceiling a take-back left."""
    settings = job.settings
    most_run = max(p.configuration.trainers for p in job.observed.points)
    top = max(most_run + settings.step, math.floor(most_run * settings.explore_factor))
    top -= job.chiefs
    for bound in (
        _ceiling(job.context.plans, TAKEN_BACK_TO),
        job.context.job.bounds_of(ROLE_WORKER).max_count,
    ):
        if bound is not None:
            top = min(top, int(bound))
    return top


def _more_workers(job: _Job) -> list[_Candidate]:
    context = job.context
    top = _reach(job)
    found = []
    cpu = job.now.trainer_cpu
    for count in range(job.workers + 1, top + 1):
        if _exceeds(context, {ROLE_WORKER: RoleSpec(count=count)}):
            break
        configuration = job.configuration(count, cpu)
        found.append(
            _Candidate(count, cpu, configuration, job.predict(configuration), "more workers")
        )
    return found


def _capped(candidate: _Candidate, cap: float) -> _Candidate:
    """``candidate`` with its predicted speeds at most ``cap``, the busiest PS's."""
    return _bounded(candidate, cap, f"the busiest PS serves at most {cap:.2f} steps/s")


def _paced(candidate: _Candidate, per_core: float | None) -> _Candidate:
    """``candidate`` with its predicted speeds at most its trainers' cores x ``per_core``,
    today's steps per trainer core in use (None: not known, no bound). A curve fitted
    where the workers were cut while the PS grew credits the speed to fewer trainers:
    one trainer was predicted to outrun 36."""
    if per_core is None:
        return candidate
    c = candidate.configuration
    bound = c.trainers * c.trainer_cpu * per_core
    why = (
        f"{c.trainers} trainers of {c.trainer_cpu:g} cores run at most {bound:.2f} steps/s "
        f"at today's {per_core:.2f} steps/s per core in use"
    )
    return _bounded(candidate, bound, why)


def _bounded(candidate: _Candidate, bound: float, why: str) -> _Candidate:
    """``candidate`` with its predicted speeds at most ``bound``, and ``why`` added to its
    reason where that lowers them."""
    p = candidate.prediction
    if p.high <= bound:
        return candidate
    bounded = Prediction(min(p.steps_per_sec, bound), min(p.low, bound), bound)
    return replace(candidate, prediction=bounded, why=f"{candidate.why}; {why}")


def _sure_jumps(job: _Job) -> list[_Candidate]:
    """Configurations the fit is sure of (within ``sure_within``, from ``sure_points``
    measured ones or more), past the step's reach: any worker count the limits hold, at
    today's worker size or smaller, down to the smallest the job ran (more, smaller
    workers where the curve says their cores do more)."""
    context, settings = job.context, job.settings
    if job.fitted is None or len(job.fitted.points) < settings.sure_points:
        return []
    bounds = context.job.bounds_of(ROLE_WORKER)
    low = bounds.min_count or 1
    high = _ceiling(context.plans, TAKEN_BACK_TO)
    if bounds.max_count is not None:
        high = bounds.max_count if high is None else min(high, bounds.max_count)
    # The curve's CPU part is only known between the sizes the job ran: a curve that
    # needs no CPU part there says nothing of a smaller worker.
    smallest = min(p.configuration.trainer_cpu for p in job.fitted.points)
    sizes = {_floor_cpu(job.now.trainer_cpu * share) for share in _TRADE_SIZES}
    sizes.add(job.now.trainer_cpu)
    found = []
    ps_cure = _one_more_ps_gain(job)
    for cpu in sorted(c for c in sizes if smallest - 1e-9 <= c <= job.now.trainer_cpu):
        top = _most_that_fit(context, cpu, low, high)
        for count in _count_grid(low, top):
            configuration = job.configuration(count, cpu)
            if configuration == job.now:
                continue
            p = job.predict(configuration)
            if p.measured or p.steps_per_sec <= 0 or p.uncertainty > settings.sure_within:
                continue
            if count < job.workers and p.steps_per_sec <= job.speed.steps_per_sec * (1 + ps_cure):
                # The trainers' cost on each other may be their wait on the PS's links,
                # which one more PS shortens without giving up their compute: the PS
                # rules try that first.
                continue
            why = f"the fit is sure there (its curves within {p.uncertainty:.0%})"
            found.append(_Candidate(count, cpu, configuration, p, why, sure=True))
    return found


def _one_more_ps_gain(job: _Job) -> float:
    """The most one more PS could gain by the fit's plausible curves (0 when the limits
    hold no more PS, or the job has none): a job that never ran another PS count cannot
    tell the trainers' cost on each other from their queue at the PS's links."""
    if job.fitted is None or job.now.ps_count <= 0:
        return 0.0
    outlook = job.fitted.ps_outlook(job.now)
    if outlook is None or _exceeds(job.context, {ROLE_PS: RoleSpec(count=job.now.ps_count + 1)}):
        return 0.0
    return outlook.one_more_ps_high


def _most_that_fit(context: OptimizerContext, cpu: float, low: int, high: int | None) -> int:
    """The most workers of ``cpu`` cores the limits hold (at least ``low``, at most
    ``high``); ``low`` - 1 when not even ``low`` fit. Without a CPU limit or a bound, as
    many as take the cores the job has now."""
    if high is None:
        limit = context.job.limits.cpu
        cores = limit if limit is not None else planned_totals({}, context.job, context.nodes).cpu
        high = max(low, math.floor(cores / cpu))
    if _exceeds(context, {ROLE_WORKER: RoleSpec(count=low, cpu=cpu)}):
        return low - 1
    while low < high:
        middle = (low + high + 1) // 2
        if _exceeds(context, {ROLE_WORKER: RoleSpec(count=middle, cpu=cpu)}):
            high = middle - 1
        else:
            low = middle
    return low


def _count_grid(low: int, top: int) -> list[int]:
    """Worker counts from ``low`` to ``top``: every one up to 10, then about
    ``_COUNT_STEP`` apart, and ``top``."""
    counts = []
    count = low
    while count <= top:
        counts.append(count)
        count = max(count + 1, math.floor(count * _COUNT_STEP))
    if top >= low and counts[-1] != top:
        counts.append(top)
    return counts


def _more_cpu(job: _Job) -> list[_Candidate]:
    """More CPU per worker, when the workers use nearly all of theirs."""
    context, settings = job.context, job.settings
    used = job.cpu_used
    cpu = job.now.trainer_cpu
    if used is None or cpu <= 0 or used < settings.cpu_bound_at * cpu:
        return []
    # Use near the request is also a worker sized to what it needs; a CPU-bound one is
    # held at its request (throttled) in three samples of four or more.
    recent = [
        s
        for n in context.nodes_of(ROLE_WORKER)
        for s in context.samples_of(n.name)[-settings.cpu_bound_samples :]
    ]
    if sum(s.cpu >= _AT_REQUEST * cpu for s in recent) < 0.75 * len(recent):
        return []
    top = min(cpu * settings.cpu_growth, context.node_max.cpu)
    ceiling = _ceiling(context.plans, TAKEN_BACK_CPU, cpu_increase=True)
    if ceiling is not None:
        top = min(top, ceiling)
    bigger = _floor_cpu(top)
    while bigger > cpu + 1e-9:
        if not _exceeds(context, {ROLE_WORKER: RoleSpec(cpu=bigger)}):
            configuration = job.configuration(job.workers, bigger)
            why = f"the workers use {used:.2f} of their {cpu:g} cores (CPU-bound)"
            return [_Candidate(job.workers, bigger, configuration, job.predict(configuration), why)]
        bigger = _floor_cpu(bigger - 1e-6)
    return []


def _give_back(job: _Job, busiest: str, ps_evidence: dict) -> Proposal | None:
    """Fewer workers when the busiest PS holds the speed, the job's CPU limit leaves it
    less than ``ps_room`` x its cores to grow, and the workers wait on it (at most
    ``trim_wait`` of their CPU used): the rest run at most ``trim_target`` busy at
    today's speed, and at least as many go as free the PS's room. A PS-bound job keeps
    its speed with fewer workers; the cores go to the PS (hot_ps, ps_scaling). None when
    no worker needs to go."""
    context, settings = job.context, job.settings
    limit = context.job.limits.cpu
    ps = next((n for n in context.nodes_of(ROLE_PS) if n.name == busiest), None)
    used = job.cpu_used
    cpu = job.now.trainer_cpu
    if limit is None or ps is None or used is None or cpu <= 0 or job.workers <= 1:
        return None
    room = limit - planned_totals({}, context.job, context.nodes).cpu
    needed = settings.ps_room * ps.cpu
    busy = used / cpu
    if room >= needed or busy > settings.trim_wait:
        return None
    keep = math.ceil(job.now.trainers * busy / settings.trim_target - 1e-9) - job.chiefs
    free = job.workers - math.ceil((needed - room) / cpu - 1e-9)
    count = max(keep, free, context.job.bounds_of(ROLE_WORKER).min_count or 1)
    floor = _floor(context.plans)
    if count >= job.workers or (floor is not None and count < floor):
        return None
    freed = (job.workers - count) * cpu
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(count=count)},
        reasons=[
            reason(
                NAME,
                f"busiest PS {busiest} at {ps_evidence['ps_cpu_utilization']:.0%} CPU holds "
                f"the speed ({job.speed.steps_per_sec:.2f} steps/s), the CPU limit {limit:g} "
                f"leaves it {room:.2f} cores (less than {settings.ps_room:g} x its {ps.cpu:g}), "
                f"and the workers use {busy:.0%} of their CPU: {count} of them run today's "
                f"speed at most {settings.trim_target:.0%} busy and free {freed:g} cores for "
                f"the PS: workers {job.workers} -> {count}",
                ps_evidence
                | _fit_evidence(job)
                | {
                    "worker_count": job.workers,
                    "added": count - job.workers,
                    COUNT_BEFORE: job.workers,
                    CPU_BEFORE: cpu,
                    WORKER_CPU: cpu,
                    "worker_utilization": round(busy, 3),
                    "cpu_room": round(room, 3),
                },
                {
                    "trim_wait": settings.trim_wait,
                    "trim_target": settings.trim_target,
                    "ps_room": settings.ps_room,
                },
            )
        ],
    )


def _smaller_for_a_ps(job: _Job, busiest: str, ps_evidence: dict) -> Proposal | None:
    """Smaller workers, so that one more PS of the role's size fits the CPU limit, when
    ``busiest`` holds the speed (called at ``ps_cpu_threshold`` or more), every PS is at
    least ``trim_target`` busy (the tier as a whole holds it, and more PS would serve
    more), the limit leaves ``busiest`` less than ``ps_room`` to grow, and the workers,
    using more than ``trim_wait`` of their CPU, would still use at most ``room_busy`` of
    their smaller cores at today's speed. Fewer workers cannot free those cores when
    each is busy (``_give_back``); a smaller size can. Once in a job's life, and not
    against a PS load that grows per step (``cost_growing``). None otherwise."""
    context, settings = job.context, job.settings
    limit = context.job.limits.cpu
    ps_nodes = [n for n in context.nodes_of(ROLE_PS) if n.cpu > 0]
    ps_role = current_role(ROLE_PS, context.job, context.nodes).cpu
    used = job.cpu_used
    cpu = job.now.trainer_cpu
    hot = next((n for n in ps_nodes if n.name == busiest), None)
    if limit is None or hot is None or not ps_role or used is None or cpu <= 0:
        return None
    if job.workers < 1 or used <= settings.trim_wait * cpu:
        return None  # they wait: fewer of them free the cores (_give_back)
    for ps in ps_nodes:
        recent = context.samples_of(ps.name)[-settings.ps_samples :]
        if not recent or mean([x.cpu for x in recent]) < settings.trim_target * ps.cpu:
            return None
    if any(
        r.optimizer == NAME and r.evidence.get(ROOM_FOR_A_PS)
        for p in context.plans
        if p.status == PlanStatus.applied
        for r in p.reasons
    ):
        # Once (within the plans the optimizers read, RECENT_PLANS): made again each time
        # the tier filled up, the workers shrank step by step under a PS load that grows
        # (ps-growing-load: 0.920 -> 0.833 of its best).
        return None
    if cost_growing(context, cost_ratios(context)):
        # A PS load that grows per step: one more PS today is short again soon, and the
        # workers made smaller for it stay small; ps_scaling's trades follow such a load.
        return None
    room = limit - planned_totals({}, context.job, context.nodes).cpu
    need = ps_role - room
    if need <= 0 or room >= settings.ps_room * hot.cpu:
        # One more PS fits, or the busiest may grow where it is (hot_ps).
        return None
    smaller = _floor_cpu(cpu - need / job.workers)
    freed = job.workers * (cpu - smaller)
    # Many workers each giving a step of CPU free far more than one PS takes, and the
    # rest idles until the workers grow again: at most one more PS' worth beyond it.
    if (
        smaller < FINE_CPU_STEP
        or used > settings.room_busy * smaller
        or freed - need > ps_role + 1e-9
    ):
        return None
    return Proposal(
        roles={ROLE_WORKER: RoleSpec(cpu=smaller)},
        reasons=[
            reason(
                NAME,
                f"every PS is at least {settings.trim_target:.0%} busy and holds the speed "
                f"({job.speed.steps_per_sec:.2f} steps/s); the CPU limit {limit:g} leaves "
                f"{room:.2f} cores, less than one more PS of {ps_role:g}. The workers use "
                f"{used:.2f} cores each: {cpu:g} -> {smaller:g} cores makes room for it, "
                f"{used / smaller:.0%} busy at today's speed",
                ps_evidence
                | _fit_evidence(job)
                | {
                    "worker_count": job.workers,
                    "added": 0,
                    "worker_cpu_used": round(used, 3),
                    "cpu_room": round(room, 3),
                    COUNT_BEFORE: job.workers,
                    CPU_BEFORE: cpu,
                    WORKER_CPU: smaller,
                    ROOM_FOR_A_PS: True,
                },
                {
                    "trim_target": settings.trim_target,
                    "trim_wait": settings.trim_wait,
                    "room_busy": settings.room_busy,
                    "cpu_limit": limit,
                },
            )
        ],
    )


def _smaller_to_fit(job: _Job, evidence: dict) -> Proposal | None:
    """More workers, every worker made smaller so that they fit the CPU limit, when that
    adds at least ``min_cpu_in_use_gain`` to the CPU the workers use (a worker that uses
    less than its request loses nothing): as many as fit with each still given what a
    worker uses, within the step's reach (``explore_factor``), the busiest PS's
    ``ps_room`` left free when the workers wait; one more when even one more takes some
    of what they use. Else None."""
    context, settings = job.context, job.settings
    workers = job.workers
    now = current_role(ROLE_WORKER, context.job, context.nodes)
    limit = context.job.limits.cpu
    used = job.cpu_used
    top = _reach(job)
    if limit is None or not now.cpu or used is None or used <= 0 or top <= workers:
        return None
    # The other roles at their nodes' own size: a PS migrated to more CPU counts as such.
    others = planned_totals({ROLE_WORKER: RoleSpec(count=0)}, context.job, context.nodes).cpu

    # Workers that wait (at most trim_wait of their CPU used) may wait on the PS: more
    # than one more leaves the busiest PS its ps_room to grow, or the PS rules' next
    # move would cut them again.
    ps_cpu = max((n.cpu for n in context.nodes_of(ROLE_PS)), default=0.0)
    reserve = settings.ps_room * ps_cpu if used <= settings.trim_wait * now.cpu else 0.0

    def size(count: int) -> float:
        room = limit - others - (reserve if count > workers + 1 else 0.0)
        return min(_floor_cpu(room / count), now.cpu)

    # Workers given less than they use wait on their own cores: the count stops where
    # each would get less than its use, unless that is at the first worker added.
    count = next((c for c in range(top, workers + 1, -1) if size(c) >= used - 1e-9), workers + 1)
    cpu = size(count)
    gain = count * min(cpu, used) / (workers * used) - 1
    roles = {ROLE_WORKER: RoleSpec(count=count, cpu=cpu)}
    predicted = job.predict(job.configuration(count, cpu))
    if (
        cpu < FINE_CPU_STEP
        or gain < settings.min_cpu_in_use_gain
        or predicted.high < job.speed.steps_per_sec * (1 + settings.min_gain)
        or exceeded_limits(planned_totals(roles, context.job, context.nodes), context.job.limits)
    ):
        return None
    return Proposal(
        roles=roles,
        reasons=[
            reason(
                NAME,
                f"{_describe(job.now)} at {job.speed.steps_per_sec:.2f} steps/s; one more "
                f"worker of {now.cpu:g} cores would exceed the CPU limit {limit:g}, so the "
                f"workers, using {used:.2f} cores each, get {cpu:g}: workers {workers} -> "
                f"{count}, {gain:+.0%} CPU in use",
                evidence
                | {
                    "worker_count": workers,
                    "added": count - workers,
                    "worker_cpu_used": round(used, 3),
                    COUNT_BEFORE: workers,
                    CPU_BEFORE: now.cpu,
                    WORKER_CPU: cpu,
                    PREDICTED: round(predicted.steps_per_sec, 4),
                    PREDICTED_LOW: round(predicted.low, 4),
                    "predicted_high": round(predicted.high, 4),
                },
                {"min_cpu_in_use_gain": settings.min_cpu_in_use_gain, "cpu_limit": limit},
            )
        ],
    )


# Small readings ---------------------------------------------------------------------


def _floor_cpu(cores: float) -> float:
    """``cores`` rounded down to a worker size this optimizer sets: a multiple of
    ``FINE_CPU_STEP`` below ``FINE_BELOW`` cores, of ``CPU_STEP`` from there."""
    step = FINE_CPU_STEP if cores < FINE_BELOW - 1e-9 else CPU_STEP
    return floor_to(cores, step)


def _sets_workers(plan: PlanView) -> bool:
    return ROLE_WORKER in plan.roles


def _ceiling(plans: Sequence[PlanView], key: str, cpu_increase: bool = False) -> float | None:
    """The lowest worker count (``TAKEN_BACK_TO``) or CPU (``TAKEN_BACK_CPU``) an applied
    take-back of a growth of it went down to: growth past it did not pay. Other decreases
    (the guard fitting limits, a role's max_count) say nothing of what growth pays."""
    before_key = CPU_BEFORE if cpu_increase or key == TAKEN_BACK_CPU else COUNT_BEFORE
    values = [
        value
        for value, before in _take_backs(plans, key, before_key)
        if before is None or before > value
    ]
    return min(values, default=None)


def _floor(plans: Sequence[PlanView]) -> int | None:
    """The highest worker count an applied take-back of a cut went back up to: fewer
    workers than that made the job slower, and giving them back again to the same PS
    would repeat a change already judged (29 -> 27 workers, taken back as 2.5 % slower,
    was cut again 10 minutes later)."""
    values = [
        value
        for value, before in _take_backs(plans, TAKEN_BACK_TO, COUNT_BEFORE)
        if before is not None and before < value
    ]
    return max(values, default=None)


def _take_backs(
    plans: Sequence[PlanView], key: str, before_key: str
) -> Iterator[tuple[float, float | None]]:
    """``(value taken back to, value before the take-back)`` of worker_tuning's applied
    take-backs that name ``key`` (the value before is None where the reason gives none)."""
    for p in plans:
        if p.status != PlanStatus.applied or not _sets_workers(p):
            continue
        for r in p.reasons:
            if r.optimizer == NAME and key in r.evidence:
                yield r.evidence[key], r.evidence.get(before_key)


def _busiest_ps(context: OptimizerContext, samples: int) -> tuple[str, float] | None:
    """The PS with the highest mean CPU used / requested over its last samples."""
    loads = []
    for ps in context.nodes_of(ROLE_PS):
        recent = context.samples_of(ps.name)[-samples:]
        if recent and ps.cpu > 0:
            loads.append((mean([s.cpu for s in recent]) / ps.cpu, ps.name))
    if not loads:
        return None
    utilization, name = max(loads)
    return name, utilization


def _worker_cpu_used(context: OptimizerContext, settings: WorkerTuningSettings) -> float | None:
    """The cores a worker uses, over the workers' last ``worker_samples`` samples, less
    those taken while training stalled (a speed sample at 0 or below ``stall_share`` of
    their median): workers idle through data loading, a checkpoint or a PS down, and
    sizing them from that use shrank 25 workers of 1.1 cores to 43 of 0.4. None without
    samples, or when every one was taken in a stall. Only the stalled samples go: a job
    that stalls often would otherwise never be sized again."""
    nodes = [n for n in context.nodes_of(ROLE_WORKER) if n.cpu > 0]
    recent = [context.samples_of(n.name)[-settings.worker_samples :] for n in nodes]
    recent = [r for r in recent if r]
    if not recent:
        return None
    since = min(s.ts for r in recent for s in r)
    stalls = stalled_periods(context, since, settings.stall_share)
    kept = [[s for s in r if not during(stalls, s.ts)] for r in recent]
    kept = [r for r in kept if r]
    if not kept:
        return None
    return mean([mean([s.cpu for s in r]) for r in kept])


def _exceeds(context: OptimizerContext, roles: dict[str, RoleSpec]) -> dict:
    """The limits ``roles`` would exceed, every node at its own size (a PS migrated to
    more CPU than its role's counts as such)."""
    return exceeded_limits(planned_totals(roles, context.job, context.nodes), context.job.limits)


def _reported(context: OptimizerContext, trainers: int) -> bool:
    return any(s.workers == trainers for s in context.speed)


def _cores(configuration: Configuration) -> float:
    return configuration.trainers * configuration.trainer_cpu + configuration.ps_cpu


def _describe(configuration: Configuration) -> str:
    return f"{configuration.trainers} trainers x {configuration.trainer_cpu:g} cores"


def _fit_evidence(job: _Job) -> dict:
    evidence: dict[str, object] = {
        "workers": job.now.trainers,
        "steps_per_sec": round(job.speed.steps_per_sec, 4),
        "fit_points": len(job.observed.points),
    }
    if job.fitted is not None:
        evidence["fit_parameters"] = {k: round(v, 8) for k, v in job.fitted.parameters.items() if v}
    if job.observed.stalled:
        evidence["stalled_samples"] = job.observed.stalled
    return evidence
