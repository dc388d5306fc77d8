"""The speed a job measured at each configuration it ran, read from its context: what
``brain.optimizing.speed_fit`` fits.

A speed sample counts for the configuration in effect when it was taken: its trainers
are the sample's own count (workers and chief, as the master reports them), the cores
per worker and the PS cores come from the applied plans before it (the role's values
now where no plan ever set them). Left out are samples that do not measure a
configuration:

- samples older than the first applied plan that set a size they would need (what the
  job ran before it is not known);

- samples within ``settle_s`` of an applied change (pods restarting, a PS relaunched);
- stalls: a speed of 0 (data loading, a checkpoint, a PS down) or below ``stall_share``
  of the median of its configuration's samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import median, pstdev

from brain.domain import ROLE_CHIEF, ROLE_PS, ROLE_WORKER, PlanStatus
from brain.optimizing.context import OptimizerContext, PlanView, SpeedSample
from brain.optimizing.roles import current_role
from brain.optimizing.speed_fit import MIN_SAMPLE_NOISE, Configuration, SpeedPoint

# Defaults for ``observe``: a minute and a half for restarted pods to train again (a
# relaunch takes about a minute), and half the usual speed for a stall.
SETTLE_S = 90.0
STALL_SHARE = 0.5
# A size no plan tells for a sample's time.
_UNKNOWN = -1.0


@dataclass(frozen=True)
class Observed:
    """A job's speed points and which samples were left out."""

    points: tuple[SpeedPoint, ...]
    # Every kept sample with the configuration it measured, oldest first.
    measured: tuple[tuple[SpeedSample, Configuration], ...]
    stalled: int
    settling: int

    def point(self, configuration: Configuration) -> SpeedPoint | None:
        return next((p for p in self.points if p.configuration == configuration), None)

    @property
    def current(self) -> Configuration | None:
        """The configuration of the newest kept sample."""
        return self.measured[-1][1] if self.measured else None

    def before(self, configuration: Configuration) -> Configuration | None:
        """The configuration the job ran before its latest run at ``configuration``:
        that of the newest kept sample of another one."""
        latest = max(
            (i for i, (_, c) in enumerate(self.measured) if c == configuration), default=None
        )
        if latest is None:
            return None
        for _, other in reversed(self.measured[:latest]):
            if other != configuration:
                return other
        return None


def observe(context: OptimizerContext, settle_s: float, stall_share: float) -> Observed:
    applied = sorted(
        (p for p in context.plans if p.status == PlanStatus.applied and p.applied_at),
        key=lambda p: p.applied_at,
    )
    settle = timedelta(seconds=settle_s)
    configured: list[tuple[SpeedSample, Configuration]] = []
    settling = 0
    for sample in context.speed:
        if sample.workers <= 0:
            continue
        if any(p.applied_at <= sample.ts < p.applied_at + settle for p in applied):
            settling += 1
            continue
        configuration = _configuration(context, applied, sample)
        if configuration is not None:
            configured.append((sample, configuration))
    typical = {
        c: median(s.steps_per_sec for s, other in configured if other == c)
        for c in dict.fromkeys(c for _, c in configured)
    }
    kept = tuple(
        (s, c)
        for s, c in configured
        if s.steps_per_sec > 0 and s.steps_per_sec >= stall_share * typical[c]
    )
    points = []
    for configuration in dict.fromkeys(c for _, c in kept):
        speeds = [s.steps_per_sec for s, c in kept if c == configuration]
        mean = sum(speeds) / len(speeds)
        noise = pstdev(speeds) / mean if len(speeds) > 1 else MIN_SAMPLE_NOISE
        points.append(SpeedPoint(configuration, mean, len(speeds), noise))
    return Observed(tuple(points), kept, len(configured) - len(kept), settling)


def _configuration(
    context: OptimizerContext, applied: Sequence[PlanView], sample: SpeedSample
) -> Configuration | None:
    worker_cpu = _role_value(context, applied, sample.ts, ROLE_WORKER, "cpu")
    ps_count = _role_value(context, applied, sample.ts, ROLE_PS, "count")
    ps_cpu = _role_value(context, applied, sample.ts, ROLE_PS, "cpu")
    if _UNKNOWN in (worker_cpu, ps_count, ps_cpu):
        return None
    ps_total = (ps_count or 0) * (ps_cpu or 0.0)
    # A PS migrated to another size (hot_ps) since the PS role's size was last set counts
    # at its own size.
    indexes = {n.name: n.index for n in context.nodes_of(ROLE_PS)}
    migrated: dict[str, float] = {}
    for plan in applied:
        if plan.applied_at > sample.ts:
            break
        if ROLE_PS in plan.roles and plan.roles[ROLE_PS].cpu is not None:
            migrated.clear()
        for change in plan.migrate:
            if change.role == ROLE_PS and change.cpu is not None and change.name in indexes:
                migrated[change.name] = change.cpu
    ps_total += sum(
        cpu - (ps_cpu or 0.0) for name, cpu in migrated.items() if indexes[name] < (ps_count or 0)
    )
    return Configuration(
        trainers=sample.workers,
        trainer_cpu=float(worker_cpu or 0.0),
        ps_cpu=round(float(ps_total), 6),
        ps_count=int(ps_count or 0),
    )


def _role_value(
    context: OptimizerContext, applied: Sequence[PlanView], ts: datetime, role: str, attr: str
) -> float | None:
    """``role``'s ``attr`` at ``ts``: the newest applied plan before it that set it; the
    role's value now when no plan set it; ``_UNKNOWN`` when only later plans did."""
    setting = [p for p in applied if role in p.roles and getattr(p.roles[role], attr) is not None]
    earlier = [p for p in setting if p.applied_at <= ts]
    if earlier:
        return getattr(earlier[-1].roles[role], attr)
    if setting:
        return _UNKNOWN
    return getattr(current_role(role, context.job, context.nodes), attr)


def stalled_since(context: OptimizerContext, since: datetime, stall_share: float) -> int:
    """How many speed samples at or after ``since`` are stalls: 0, or below
    ``stall_share`` of the median of those samples. CPU measured over such a window
    shows the stall (idle trainers, a dead PS missing), not what the job needs."""
    return len(stalled_periods(context, since, stall_share))


def stalled_periods(
    context: OptimizerContext, since: datetime, stall_share: float
) -> list[tuple[datetime | None, datetime]]:
    """The periods the stalled speed samples at or after ``since`` measured (see
    ``stalled_since``): each from the speed sample before it (None for the first the job
    sent) to its own time, since a speed is the steps over the time since the last."""
    speed = sorted(context.speed, key=lambda s: s.ts)
    first = next((i for i, s in enumerate(speed) if s.ts >= since), len(speed))
    window = speed[first:]
    if not window:
        return []
    typical = median(s.steps_per_sec for s in window)
    return [
        (speed[i - 1].ts if i > 0 else None, s.ts)
        for i, s in enumerate(speed[first:], start=first)
        if s.steps_per_sec <= 0 or s.steps_per_sec < stall_share * typical
    ]


def during(periods: Sequence[tuple[datetime | None, datetime]], ts: datetime) -> bool:
    """Whether a node sample taken at ``ts`` measured one of ``periods``: after its
    start, up to and including its end (a scrape, like a speed, covers the time before
    it)."""
    return any((start is None or start < ts) and ts <= end for start, end in periods)


def trainers_now(context: OptimizerContext) -> tuple[int, int]:
    """The worker count the job runs now and the chiefs that train beside them."""
    workers = current_role(ROLE_WORKER, context.job, context.nodes).count or 0
    chiefs = current_role(ROLE_CHIEF, context.job, context.nodes).count or 0
    return workers, chiefs
