"""The figures of one simulated run, as ``brain simulate --json`` prints them."""

from __future__ import annotations

from dataclasses import dataclass, field

from brain.domain import PlanStatus
from brain.lab.simulation.best import MAX_PS, Allocation, best_allocation
from brain.lab.simulation.master import TICK_S, Run

# A count change reversed within this many seconds is an oscillation (worker_tuning's
# default cooldown).
OSCILLATION_WINDOW_S = 600.0
# Speed is judged on a moving mean over this many seconds (noise is ~3% per sample).
SMOOTHING_S = 120.0
# reached_steps_per_sec: mean over the last this-many seconds of the run.
REACHED_WINDOW_S = 600.0
TARGET_SHARE = 0.95


@dataclass(frozen=True)
class ScenarioResult:
    scenario: str
    seed: int
    horizon_s: float
    best_steps_per_sec: float
    reached_steps_per_sec: float
    plans_to_95pct: int | None
    # Of those, the plans that changed a count or a CPU request (not memory alone).
    sizing_plans_to_95pct: int | None
    plans_applied: int
    over_limit_seconds: float
    oom_kills: int
    # OOM kills of pods running a memory size Brain chose (not the user's ask).
    oom_kills_after_brain_size: int
    # Applied plans after which a role's cpu_limit was below its cpu request.
    plans_cpu_limit_below_cpu: int
    oom_fixes_lost: int
    oscillations: int
    core_hours: float
    best_core_hours: float
    plans_with_foreign_roles: int
    # Scenarios with an injected slow worker: seconds from the slowdown to the slow_node
    # plan that replaced it (None: never, or nothing injected), and workers slow_node
    # replaced that were not slowed down.
    slow_node_delay_s: float | None
    slow_node_false_replacements: int
    # The fewest worker pods the job ran (starting ones included); workers plans gave
    # back to a short cluster (cluster_shortage); with a ClusterSqueeze, workers plans
    # added while the cluster was short (None: no squeeze).
    min_workers: int
    workers_given_back: int
    workers_added_while_short: int | None
    # The throughput family a random job was drawn from (None: a named scenario).
    family: str | None = None
    # oom_kills_after_brain_size by the optimizer that chose the size the pod was killed
    # at (the last whose reason in that plan names it, else "<stage> plan").
    oom_kills_by_chooser: dict[str, int] = field(default_factory=dict)


def run_best(run: Run, ps_busy: float = 1.0) -> Allocation:
    """The best the run's job can reach, its PS counts searched up to ``MAX_PS`` or the
    most PS the run had, whichever is more, each PS using at most ``ps_busy`` of its CPU."""
    most_ps = max((x.ps for x in run.timeline), default=0)
    return best_allocation(run.scenario, run.final_global_step, max(MAX_PS, most_ps), ps_busy)


def measure(run: Run, horizon_s: float, ps_busy: float = 1.0) -> ScenarioResult:
    s = run.scenario
    best = run_best(run, ps_busy)
    speeds = [x.steps_per_sec for x in run.timeline]
    window = max(int(SMOOTHING_S / TICK_S), 1)
    smoothed = [
        sum(speeds[max(i - window + 1, 0) : i + 1]) / len(speeds[max(i - window + 1, 0) : i + 1])
        for i in range(len(speeds))
    ]
    reached_at = next(
        (
            run.timeline[i].t
            for i, v in enumerate(smoothed)
            if i + 1 >= window and v >= TARGET_SHARE * best.steps_per_sec
        ),
        None,
    )
    tail = [x.steps_per_sec for x in run.timeline if x.t > horizon_s - REACHED_WINDOW_S]
    return ScenarioResult(
        scenario=s.name,
        seed=run.seed,
        horizon_s=horizon_s,
        best_steps_per_sec=round(best.steps_per_sec, 2),
        reached_steps_per_sec=round(sum(tail) / len(tail), 2) if tail else 0.0,
        plans_to_95pct=None
        if reached_at is None
        else sum(1 for a in run.applied if a.t <= reached_at),
        sizing_plans_to_95pct=None
        if reached_at is None
        else sum(1 for a in run.applied if a.t <= reached_at and a.sizing),
        plans_applied=len(run.applied),
        over_limit_seconds=_over_limit_seconds(run),
        oom_kills=run.oom_kills,
        oom_kills_after_brain_size=run.oom_kills_after_brain_size,
        plans_cpu_limit_below_cpu=sum(1 for a in run.applied if a.cpu_limit_below_cpu),
        oom_fixes_lost=sum(
            1 for i in run.oom_plans if run.final_status.get(i) != PlanStatus.applied
        ),
        oscillations=_oscillations(run),
        core_hours=round(sum(x.cpu for x in run.timeline) * TICK_S / 3600, 2),
        best_core_hours=round(best.cores * horizon_s / 3600, 2),
        plans_with_foreign_roles=run.foreign_roles,
        slow_node_delay_s=None
        if run.slowed_at is None or run.slow_replaced_at is None
        else round(run.slow_replaced_at - run.slowed_at, 1),
        slow_node_false_replacements=run.other_replacements,
        min_workers=min((x.worker_pods for x in run.timeline), default=0),
        workers_given_back=sum(
            before - after
            for a in run.applied
            if any(
                r.optimizer == "cluster_shortage" and "returned" in r.evidence
                for r in a.plan.reasons
            )
            for role, (before, after) in a.counts.items()
            if role == "worker" and after < before
        ),
        workers_added_while_short=None
        if s.cluster is None
        else sum(
            after - before
            for a in run.applied
            if s.cluster.short(a.t)
            for role, (before, after) in a.counts.items()
            if role == "worker" and after > before
        ),
        family=s.family,
        oom_kills_by_chooser=dict(sorted(run.oom_kills_by_chooser.items())),
    )


def _over_limit_seconds(run: Run) -> float:
    s = run.scenario
    over = 0.0
    for x in run.timeline:
        if (
            (s.limit_cpu is not None and x.cpu > s.limit_cpu + 1e-6)
            or (s.limit_memory_mib is not None and x.memory_mib > s.limit_memory_mib + 1e-6)
            or (s.limit_gpu is not None and x.gpu > s.limit_gpu + 1e-6)
        ):
            over += TICK_S
    return over


def _oscillations(run: Run) -> int:
    """Count changes of a role that reverse the previous one within the window."""
    last: dict[str, tuple[float, int]] = {}  # role -> (time, direction) of its last change
    found = 0
    for applied in run.applied:
        for role, (before, after) in applied.counts.items():
            direction = 1 if after > before else -1
            previous = last.get(role)
            if (
                previous is not None
                and previous[1] != direction
                and applied.t - previous[0] < OSCILLATION_WINDOW_S
            ):
                found += 1
            last[role] = (applied.t, direction)
    return found
