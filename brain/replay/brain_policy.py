"""Brain's default pipeline as a job master runs it, on in-memory contexts.

- create: the ``create`` stage (``run_stage``, the configured optimizers, combined and
  bounded) on the run's request and its workload's earlier runs as the service hands
  them over (at most ``history_jobs``, within ``history_window_days``), built as
  ``brain backtest`` builds them; the worker's memory and CPU are the run's start
  size (the request where the stage leaves one open);
- running: the ``running`` stage on the decision samples the screen lets through
  (``screen``), with the node's recent samples, its memory peak over the service's
  peak window and the plans applied so far; a migration of the node is applied from
  the next sample;
- OOM kill: an ``oom`` event, then the ``oom`` stage (``oom_recovery``); the run
  restarts at the size it proposes, or as it was when it proposes none.

The run is one job of one ``worker`` node (``worker-0``): a trace's run is one VM or pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

from brain.config import Settings
from brain.domain import EventKind, JobStatus, Limits, PlanStatus, RoleSpec, Stage, Strategy
from brain.optimizing import (
    EventView,
    JobView,
    MemoryPeak,
    NodeSample,
    NodeView,
    OptimizerContext,
    OptimizerRegistry,
    PlanView,
    Proposal,
)
from brain.optimizing.pipeline import resolve_settings, run_stage, select_optimizers, stage_pipeline
from brain.replay import adapters, screen
from brain.replay.adapters import OptimizerRecommender
from brain.replay.harness import Allocation, Change, RunSamples, requested
from brain.replay.runs import Run

if TYPE_CHECKING:  # the series loader needs pandas; the policy does not
    from brain.replay.series import RunSeries

ROLE = "worker"
NODE = "worker-0"


class CreateStage(OptimizerRecommender):
    """The create stage of the pipeline (every configured optimizer), as a recommender."""

    def __init__(self, registry: OptimizerRegistry, settings: Settings) -> None:
        readers = {"memory": adapters.memory_mib, "cpu": adapters.cpu}
        # The base class's optimizer and settings serve its own ``propose``, replaced here.
        super().__init__("brain", None, readers, role=ROLE, settings=settings)  # type: ignore[arg-type]
        self._registry = registry
        self._brain_settings = settings

    def propose(self, context: OptimizerContext) -> Proposal:
        return run_stage(self._registry, Stage.create, context, self._brain_settings).proposal


def _when(ts: int | np.integer) -> datetime:
    return datetime.fromtimestamp(int(ts), UTC)


def with_release(stages: dict[str, list[str]]) -> dict[str, list[str]]:
    """``stages`` with ``memory_release`` in the running stage (after ``oom_risk``: where
    both migrate a node, the plan keeps the larger memory)."""
    running = list(stages.get(Stage.running.value, []))
    if "memory_release" not in running:
        at = running.index("oom_risk") + 1 if "oom_risk" in running else len(running)
        running.insert(at, "memory_release")
    return {**stages, Stage.running.value: running}


class BrainLoop:
    """Brain's default pipeline; ``safety`` overrides ``learned_margin``'s settings and
    ``release``, when given, runs ``memory_release`` with these settings (its knobs)."""

    family = "brain"

    def __init__(
        self,
        registry: OptimizerRegistry,
        settings: Settings,
        safety: float | None = None,
        release: dict[str, float] | None = None,
    ) -> None:
        overrides = dict(settings.optimizer_settings)
        if safety is not None:
            overrides["learned_margin"] = {**overrides.get("learned_margin", {}), "safety": safety}
        update: dict = {"optimizer_settings": overrides}
        if release:
            overrides["memory_release"] = {**overrides.get("memory_release", {}), **release}
            pipelines = {s.value: stage_pipeline(registry, settings, s) for s in Stage}
            update["stage_optimizers"] = with_release(pipelines)
        settings = settings.model_copy(update=update)
        self.safety = safety
        self.release = dict(release or {})
        self._registry = registry
        self._settings = settings
        self._create = CreateStage(registry, settings)
        running = select_optimizers(registry, Stage.running, None, settings)
        names = {o.name for o in running}
        screened = {"oom_risk", "memory_release"}
        self._screened = names <= screen.QUIET_FOR_ONE_NODE | screened
        resolved = resolve_settings(
            [o for o in running if o.name in screened], settings.optimizer_settings, {}
        )
        self._oom_risk = resolved.get("oom_risk")
        self._release = resolved.get("memory_release")

    @property
    def name(self) -> str:
        name = "brain" if self.safety is None else f"brain_s{self.safety:g}"
        release = self._release
        if not self.release or release is None:
            return name
        hold_h = release.hold_s / 3600.0
        return f"{name}_release{hold_h:g}h_x{release.margin:g}_b{release.below_share:g}"

    def related(self, run: Run, history: Sequence[Run]) -> Sequence[Run]:
        """The earlier runs the service would hand the create stage: the most recent
        ``history_jobs`` that started within ``history_window_days``."""
        since = run.submission.start - timedelta(days=self._settings.history_window_days)
        recent = history[-self._settings.history_jobs :]
        return [r for r in recent if r.submission.start >= since]

    def policy(self, run: Run, history: Sequence[Run], samples: RunSamples, series: RunSeries):
        sizes = self._create.recommend(run.submission, self.related(run, history))
        request = requested(run)
        start = Allocation(
            sizes.get("memory") or request.memory_mib, sizes.get("cpu") or request.cpu
        )
        return BrainPolicy(self, run, samples, start)

    def levels(self, samples: RunSamples) -> np.ndarray | None:
        """The screen's levels of ``samples``; None: every decision calls the pipeline."""
        if not self._screened:
            return None
        if self._oom_risk is None:
            return np.full(len(samples), -np.inf)
        risk = self._oom_risk
        return screen.oom_risk_levels(
            samples.ts,
            samples.mem,
            window_s=self._settings.sample_window_s,
            risk_threshold=risk.risk_threshold,
            horizon_s=risk.horizon_s,
            min_trend_samples=risk.min_trend_samples,
        )

    def ceilings(self, samples: RunSamples) -> np.ndarray | None:
        """The screen's release ceilings of ``samples``; None: ``memory_release`` is off."""
        if not self._screened or self._release is None:
            return None
        release = self._release
        return screen.release_ceilings(
            samples.ts,
            samples.mem,
            window_s=self._settings.memory_peak_window_s,
            hold_s=release.hold_s,
            margin=release.margin,
            below_share=release.below_share,
        )


class BrainPolicy:
    def __init__(self, loop: BrainLoop, run: Run, samples: RunSamples, start: Allocation) -> None:
        self._loop = loop
        self._run = run
        self._samples = samples
        self._start = start
        self._levels = loop.levels(samples)
        self._ceilings = loop.ceilings(samples)
        self._peaks: tuple[np.ndarray, np.ndarray] | None = None
        # memory_release's own holds (after a migration, a kill or a growth): no sample
        # before this time can be one it acts on (Unix seconds).
        self._release_from = -np.inf
        self._plans: list[PlanView] = []
        self._events: list[EventView] = []

    def start(self) -> Allocation:
        return self._start

    def next_change(self, low: int, high: int, current: Allocation) -> Change | None:
        decides = self._samples.decides[low:high]
        if self._levels is None:
            found = np.flatnonzero(decides)
        else:
            ceilings = None
            if self._ceilings is not None:
                held = self._samples.ts[low:high] < self._release_from
                ceilings = np.where(held, np.inf, self._ceilings[low:high])
            found = screen.candidates(self._levels[low:high], decides, current.memory_mib, ceilings)
        for offset in found:
            at = low + int(offset)
            context = self._context(Stage.running, at, current)
            proposal = run_stage(self._loop._registry, Stage.running, context, self._loop._settings)
            size = self._applied(proposal.proposal, at, current)
            if size is not None:
                return Change(at, size, restarts=True)
        return None

    def on_oom(self, at: int, current: Allocation) -> Allocation:
        self._hold_release(at, killed=True)
        ts = _when(self._samples.ts[at])
        self._events.append(
            EventView(id=len(self._events) + 1, ts=ts, kind=EventKind.oom.value, node=NODE)
        )
        context = self._context(Stage.oom, at, current)
        result = run_stage(self._loop._registry, Stage.oom, context, self._loop._settings)
        size = self._applied(result.proposal, at, current)
        return size if size is not None else current

    def _applied(self, proposal: Proposal, at: int, current: Allocation) -> Allocation | None:
        """Records ``proposal`` as applied on sample ``at``; the node's new size, if any."""
        change = next((c for c in proposal.migrate if c.name == NODE), None)
        ts = _when(self._samples.ts[at])
        if change is None and proposal.source_event_id is None:
            return None
        self._plans.append(
            PlanView(
                id=len(self._plans) + 1,
                stage=Stage.oom if proposal.source_event_id is not None else Stage.running,
                status=PlanStatus.applied,
                created_at=ts,
                roles={},
                migrate=tuple(proposal.migrate),
                source_event_id=proposal.source_event_id,
                applied_at=ts,
                reasons=tuple(proposal.reasons),
            )
        )
        if change is None:
            return None
        self._hold_release(at, killed=False)
        size = Allocation(
            change.memory_mib if change.memory_mib is not None else current.memory_mib,
            change.cpu if change.cpu is not None else current.cpu,
        )
        return None if size == current else size

    def _hold_release(self, at: int, killed: bool) -> None:
        """Records a hold ``memory_release`` keeps after a migration or a kill on sample
        ``at`` (``hold_s``, ``after_oom_s``). Its hold after a growth is left to it: the
        screen may let through more than it acts on, never less."""
        release = self._loop._release
        if release is None:
            return
        hold = release.after_oom_s if killed else release.hold_s
        self._release_from = max(self._release_from, float(self._samples.ts[at]) + hold)

    def _context(self, stage: Stage, at: int, current: Allocation) -> OptimizerContext:
        samples = self._samples
        now = int(samples.ts[at])
        since = now - self._loop._settings.sample_window_s
        first = int(np.searchsorted(samples.ts[: at + 1], since, side="left"))
        recent = tuple(
            NodeSample(
                node=NODE,
                ts=_when(samples.ts[i]),
                cpu=float(samples.cpu[i]),
                memory_mib=float(samples.mem[i]),
            )
            for i in range(first, at + 1)
        )
        job = self._run.submission
        view = JobView(
            uid=f"{job.workload}/{self._run.index}",
            name=job.workload,
            user="backtest",
            dataset=None,
            group_key=job.workload,
            strategy=Strategy.allreduce,
            status=JobStatus.running,
            limits=Limits(),
            roles={ROLE: RoleSpec(count=1, cpu=current.cpu, memory_mib=current.memory_mib)},
            created_at=job.start,
            started_at=job.start,
        )
        return OptimizerContext(
            stage=stage,
            now=_when(now),
            job=view,
            nodes=(NodeView(NODE, ROLE, 0, cpu=current.cpu, memory_mib=current.memory_mib),),
            samples=recent,
            events=tuple(self._events),
            plans=tuple(self._plans),
            node_max=self._loop._settings.node_max,
            node=NODE if stage == Stage.oom else None,
            memory_peaks=(self._memory_peak(at),) if stage == Stage.running else (),
        )

    def _memory_peak(self, at: int) -> MemoryPeak:
        """The node's memory peak over the service's peak window ending at sample ``at``."""
        if self._peaks is None:
            window_s = self._loop._settings.memory_peak_window_s
            self._peaks = screen.window_peaks(self._samples.ts, self._samples.mem, window_s)
        peaks, since = self._peaks
        return MemoryPeak(NODE, float(peaks[at]), _when(since[at]))
