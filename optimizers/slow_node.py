"""Slow-node (straggler) detection: replace a worker whose mini-batches stay slower than
its peers' (DeepRec AIMaster's monitoring).

Nodes report ``step_time_s``, their mean mini-batch time since their previous sample.
The recent samples are cut into ``windows`` consecutive windows of ``window_s`` seconds
ending at the job's now. In each window a worker's step time is the median of its
samples there (at least ``min_samples``, none from the first ``warmup_s`` after it
(re)started), and the role's typical step time is the median over the workers (at least
``min_nodes`` of them). A worker is slow in a window when its step time is above
``threshold`` x that median *and* more than ``mad_k`` robust standard deviations
(1.4826 x MAD) above it, so ordinary spread among workers never counts. A worker slow in
every one of the windows is migrated to a fresh node of the same size (at most
``max_nodes`` per plan, slowest first), unless it was replaced less than ``cooldown_s``
ago or such a replacement was rejected or failed within that time.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ClassVar

from pydantic import BaseModel, Field

from brain.domain import ROLE_WORKER, PlanStatus, Stage
from brain.optimizing import (
    Changes,
    ContextInput,
    NodeChange,
    NodeSample,
    OptimizerContext,
    Proposal,
)
from optimizers._common import no_change, reason

NAME = "slow_node"
# MAD x this estimates the standard deviation of normally distributed values.
MAD_TO_SIGMA = 1.4826
# Events after which a node starts training afresh (its first minutes are not judged).
RESTART_EVENTS = frozenset({"started", "relaunched", "oom", "evicted"})
# Plans whose outcome starts a node's cooldown: applied ones, and ones the master declined.
COOLDOWN_STATUSES = frozenset({PlanStatus.applied, PlanStatus.rejected, PlanStatus.failed})


class SlowNodeSettings(BaseModel):
    threshold: float = Field(
        1.5,
        ge=1.05,
        le=10.0,
        description="A worker is slow when its step time exceeds this x its role's median.",
    )
    mad_k: float = Field(
        3.0,
        ge=0.0,
        le=20.0,
        description="...and exceeds the median by more than this many robust standard "
        "deviations (1.4826 x MAD across the role's workers).",
    )
    window_s: float = Field(
        120, ge=15, le=3600, description="Length of one judging window, seconds."
    )
    windows: int = Field(
        3,
        ge=1,
        le=20,
        description="Consecutive windows (the latest ones) a worker must be slow in.",
    )
    min_samples: int = Field(
        2, ge=1, le=1000, description="Step-time samples a worker needs in a window to be judged."
    )
    min_nodes: int = Field(
        4, ge=3, le=10000, description="Workers with enough samples a window needs for a median."
    )
    warmup_s: float = Field(
        300,
        ge=0,
        le=86400,
        description="Samples within this many seconds after a node (re)started are ignored.",
    )
    cooldown_s: float = Field(
        1800,
        ge=0,
        le=7 * 86400,
        description="No new replacement of a node within this many seconds of its last one "
        "(applied, rejected or failed).",
    )
    max_nodes: int = Field(1, ge=1, le=100, description="Most workers replaced by one plan.")


@dataclass(frozen=True)
class WindowVerdict:
    """One window's judgement of one worker."""

    step_time_s: float
    median_s: float
    mad_s: float

    @property
    def ratio(self) -> float:
        return self.step_time_s / self.median_s


def find_slow_nodes(
    samples: Sequence[NodeSample],
    starts: dict[str, datetime],
    now: datetime,
    settings: SlowNodeSettings,
) -> dict[str, list[WindowVerdict]]:
    """Workers slow in each of the latest ``windows`` windows, with each window's numbers
    (oldest first). ``starts`` maps a node to when it last (re)started."""
    judged: dict[str, list[WindowVerdict]] | None = None
    for k in reversed(range(settings.windows)):
        end = now - timedelta(seconds=k * settings.window_s)
        slow = _slow_in_window(samples, starts, end, settings)
        if judged is None:
            judged = {node: [verdict] for node, verdict in slow.items()}
        else:
            judged = {node: [*judged[node], slow[node]] for node in judged if node in slow}
        if not judged:
            return {}
    return judged or {}


def _slow_in_window(
    samples: Sequence[NodeSample],
    starts: dict[str, datetime],
    end: datetime,
    settings: SlowNodeSettings,
) -> dict[str, WindowVerdict]:
    begin = end - timedelta(seconds=settings.window_s)
    per_node: dict[str, list[float]] = {}
    for s in samples:
        if s.step_time_s is None or not begin < s.ts <= end:
            continue
        start = starts.get(s.node)
        if start is not None and s.ts < start + timedelta(seconds=settings.warmup_s):
            continue
        per_node.setdefault(s.node, []).append(s.step_time_s)
    times = {
        node: statistics.median(values)
        for node, values in per_node.items()
        if len(values) >= settings.min_samples
    }
    if len(times) < settings.min_nodes:
        return {}
    median = statistics.median(times.values())
    mad = statistics.median(abs(t - median) for t in times.values())
    if median <= 0:
        return {}
    return {
        node: WindowVerdict(t, median, mad)
        for node, t in times.items()
        if t > settings.threshold * median and t - median > settings.mad_k * MAD_TO_SIGMA * mad
    }


def restart_times(context: OptimizerContext) -> dict[str, datetime]:
    """When each node last (re)started, as far as the context tells: the job's start, a
    restart event of the node, an applied plan that migrated it, or, for a node that
    joined within the sample window, its first sample."""
    starts: dict[str, datetime] = {}

    def seen(node: str, ts: datetime | None) -> None:
        if ts is not None and (node not in starts or ts > starts[node]):
            starts[node] = ts

    for node in context.nodes:
        seen(node.name, context.job.started_at)
    for event in context.events:
        if event.node and event.kind in RESTART_EVENTS:
            seen(event.node, event.ts)
    for plan in context.plans:
        if plan.status == PlanStatus.applied:
            for change in plan.migrate:
                if change.name:
                    seen(change.name, plan.applied_at or plan.created_at)
    if context.samples:
        window_start = min(s.ts for s in context.samples)
        first: dict[str, datetime] = {}
        for s in context.samples:
            first.setdefault(s.node, s.ts)
        for node, ts in first.items():
            if ts > window_start:
                seen(node, ts)
    return starts


def _last_replacements(context: OptimizerContext) -> dict[str, datetime]:
    last: dict[str, datetime] = {}
    for plan in context.plans:
        if NAME not in plan.optimizers or plan.status not in COOLDOWN_STATUSES:
            continue
        ts = plan.applied_at or plan.created_at
        for change in plan.migrate:
            if change.name and (change.name not in last or ts > last[change.name]):
                last[change.name] = ts
    return last


class SlowNodeOptimizer:
    """Replaces a worker whose step time stays above ``threshold`` x its role's median."""

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.running})
    changes: ClassVar[Changes] = Changes(nodes=frozenset({ROLE_WORKER}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    default_order: ClassVar[dict[Stage, int]] = {Stage.running: 60}
    Settings: ClassVar[type[SlowNodeSettings]] = SlowNodeSettings

    def propose(self, context: OptimizerContext, settings: SlowNodeSettings) -> Proposal:
        threshold = {
            "threshold": settings.threshold,
            "mad_k": settings.mad_k,
            "window_s": settings.window_s,
            "windows": settings.windows,
            "warmup_s": settings.warmup_s,
            "cooldown_s": settings.cooldown_s,
        }
        workers = {n.name: n for n in context.nodes_of(ROLE_WORKER)}
        samples = [s for s in context.samples if s.node in workers]
        slow = find_slow_nodes(samples, restart_times(context), context.now, settings)
        if not slow:
            return no_change(
                NAME,
                f"no worker's step time above {settings.threshold:g}x the workers' median in "
                f"{settings.windows} consecutive {settings.window_s:.0f} s windows",
                threshold=threshold,
            )
        proposal = Proposal()
        replaced = _last_replacements(context)
        slowest_first = sorted(slow, key=lambda n: -min(v.ratio for v in slow[n]))
        for name in slowest_first:
            verdicts = slow[name]
            node = workers[name]
            evidence = {
                "node": name,
                "step_time_s": [round(v.step_time_s, 4) for v in verdicts],
                "median_step_time_s": [round(v.median_s, 4) for v in verdicts],
                "mad_s": [round(v.mad_s, 4) for v in verdicts],
            }
            ratios = ", ".join(f"{v.ratio:.2f}x" for v in verdicts)
            last = replaced.get(name)
            if last is not None and (context.now - last).total_seconds() < settings.cooldown_s:
                message = f"{name} is slow ({ratios} the median) but was replaced at {last:%H:%M}"
                message += f"; cooling down for {settings.cooldown_s:.0f} s"
            elif len(proposal.migrate) >= settings.max_nodes:
                message = f"{name} is slow ({ratios} the median); at most "
                message += f"{settings.max_nodes} replacement(s) per plan"
            else:
                proposal.migrate.append(
                    NodeChange(
                        role=node.role,
                        name=name,
                        cpu=node.cpu,
                        memory_mib=node.memory_mib,
                        gpu=node.gpu or None,
                    )
                )
                message = (
                    f"{name} is a straggler: step time {ratios} the workers' median in "
                    f"{len(verdicts)} consecutive {settings.window_s:.0f} s windows (threshold "
                    f"{settings.threshold:g}x) -> replace it on a fresh node of the same size"
                )
            proposal.reasons.append(reason(NAME, message, evidence, threshold))
        return proposal
