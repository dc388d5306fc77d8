"""What Brain's defaults would have allocated for a site's finished jobs, and what applied
plans saved.

For every finished job of the window (see ``brain.replay.site_runs``):

- *requested* and *used*: the main role's resource-hours from its summary;
- *Brain*: the job's peak node replayed through Brain's default pipeline (create stage
  from the group's earlier runs, running stage every ``cadence_s``, OOM kills answered
  by the OOM stage), its mean allocation times the role's nodes and run time. GPUs
  are left as requested (the replay sizes memory and CPU). A job without stored
  samples is sized by the create stage alone and counted as not replayed;
- *replayed OOM risk*: the replay's OOM kills, per 1,000 replayed node-hours;
- *plans saved*: for every applied plan, the role totals (count x size) before it (the
  previous applied plan's, else the job's submitted roles) minus after it, times the
  hours from its application to the job's end. Migrations of single nodes are not
  counted (they resize one node, mostly up).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from itertools import groupby

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import PlanStatus, RoleSpec, as_utc
from brain.optimizing import OptimizerRegistry
from brain.replay.brain_policy import BrainLoop
from brain.replay.harness import (
    HarnessSettings,
    RunOutcome,
    RunSamples,
    decision_mask,
    simulate,
)
from brain.replay.site_runs import SiteRun, load_runs, load_series

BY = ("namespace", "group")
DEFAULT_SAMPLE_S = 60.0


@dataclass
class SavingsRow:
    key: str
    jobs: int = 0
    replayed_jobs: int = 0
    node_hours: float = 0.0
    requested_core_h: float = 0.0
    used_core_h: float = 0.0
    brain_core_h: float = 0.0
    requested_gib_h: float = 0.0
    used_gib_h: float = 0.0
    brain_gib_h: float = 0.0
    requested_gpu_h: float = 0.0
    used_gpu_h: float = 0.0
    brain_gpu_h: float = 0.0
    replayed_node_hours: float = 0.0
    brain_ooms: int = 0
    brain_jobs_with_oom: int = 0
    plans_applied: int = 0
    plans_saved_core_h: float = 0.0
    plans_saved_gib_h: float = 0.0
    plans_saved_gpu_h: float = 0.0

    @property
    def brain_ooms_per_1000h(self) -> float | None:
        if self.replayed_node_hours <= 0:
            return None
        return 1000.0 * self.brain_ooms / self.replayed_node_hours

    def add(self, other: SavingsRow) -> None:
        for f in fields(self):
            if f.name != "key":
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict:
        return asdict(self) | {"brain_ooms_per_1000h": self.brain_ooms_per_1000h}


@dataclass(frozen=True)
class Savings:
    since: datetime
    by: str
    rows: list[SavingsRow]
    total: SavingsRow


def savings(
    session: Session,
    registry: OptimizerRegistry,
    settings: Settings,
    since: datetime,
    *,
    by: str = "namespace",
    namespaces: Sequence[str] | None = None,
    cadence_s: float = 300.0,
    progress: Callable[[int, int], None] | None = None,
) -> Savings:
    """The savings report of the jobs that ended since ``since``, grouped ``by``."""
    if by not in BY:
        raise ValueError(f"by is one of {', '.join(BY)}")
    runs = load_runs(session, since, namespaces=namespaces)
    window = [r for r in runs if r.in_window]
    series = load_series(session, [r.peak_node_id for r in window if r.peak_node_id is not None])
    plans = _plan_savings(session, window)
    loop = BrainLoop(registry, settings)
    harness = HarnessSettings(cadence_s=cadence_s)
    rows: dict[str, SavingsRow] = {}
    done = 0
    for _, group in groupby(runs, key=lambda r: r.group_key):
        mine = list(group)
        for position, run in enumerate(mine):
            if not run.in_window:
                continue
            history = [r.run for r in mine[:position]]
            key = (run.namespace or "-") if by == "namespace" else run.group_key
            row = rows.setdefault(key, SavingsRow(key))
            _add_run(row, run, history, series.get(run.peak_node_id), loop, harness)
            saved = plans.get(run.job_id)
            if saved is not None:
                row.plans_applied += saved[0]
                row.plans_saved_core_h += saved[1]
                row.plans_saved_gib_h += saved[2]
                row.plans_saved_gpu_h += saved[3]
            done += 1
            if progress is not None:
                progress(done, len(window))
    ordered = sorted(
        rows.values(), key=lambda r: (-(r.requested_gib_h + r.requested_core_h), r.key)
    )
    total = SavingsRow("total")
    for row in ordered:
        total.add(row)
    return Savings(since, by, ordered, total)


def _add_run(row: SavingsRow, run: SiteRun, history, series, loop: BrainLoop, harness) -> None:
    samples = _samples(series, harness)
    policy = loop.policy(run.run, history, samples, None)
    nodes = max(run.node_count, 1)
    node_hours = run.run_hours * nodes
    row.jobs += 1
    row.node_hours += node_hours
    row.requested_core_h += run.requested_core_h
    row.used_core_h += run.used_core_h
    row.requested_gib_h += run.requested_gib_h
    row.used_gib_h += run.used_gib_h
    row.requested_gpu_h += run.requested_gpu_h
    row.used_gpu_h += run.used_gpu_h
    row.brain_gpu_h += run.requested_gpu_h
    if len(samples) == 0:
        start = policy.start()
        row.brain_core_h += (
            _finite(start.cpu, run.requested_core_h / max(node_hours, 1e-9)) * node_hours
        )
        row.brain_gib_h += (
            _finite(start.memory_mib / 1024.0, run.requested_gib_h / max(node_hours, 1e-9))
            * node_hours
        )
        return
    outcome: RunOutcome = simulate(samples, policy, harness)
    row.replayed_jobs += 1
    # The replayed node's mean allocation (re-runs included) over the role's node-hours.
    row.brain_core_h += outcome.core_h / outcome.hours * node_hours
    row.brain_gib_h += outcome.memory_gib_h / outcome.hours * node_hours
    row.replayed_node_hours += outcome.hours
    row.brain_ooms += outcome.ooms
    row.brain_jobs_with_oom += 1 if outcome.ooms else 0


def _finite(value: float, fallback: float) -> float:
    return value if np.isfinite(value) else fallback


def _samples(series, harness: HarnessSettings) -> RunSamples:
    if series is None or len(series.ts) == 0:
        empty = np.zeros(0)
        return RunSamples(
            empty.astype(np.int64), empty, empty, empty.astype(bool), DEFAULT_SAMPLE_S
        )
    gaps = np.diff(series.ts)
    sample_s = float(np.median(gaps)) if len(gaps) else DEFAULT_SAMPLE_S
    return RunSamples(
        ts=series.ts,
        cpu=series.cpu,
        mem=series.mem,
        decides=decision_mask(series.ts, harness.cadence_s),
        sample_s=max(sample_s, 1.0),
    )


def _plan_savings(
    session: Session, runs: list[SiteRun]
) -> dict[int, tuple[int, float, float, float]]:
    """Per job: applied plans, and core-, GiB- and GPU-hours they saved (module docstring)."""
    ended = {r.job_id: r.ended_at for r in runs}
    found: dict[int, tuple[int, float, float, float]] = {}
    ids = list(ended)
    for start in range(0, len(ids), 2000):
        chunk = ids[start : start + 2000]
        submitted = dict(
            session.execute(select(JobRow.id, JobRow.roles).where(JobRow.id.in_(chunk))).all()
        )
        plans = session.scalars(
            select(ScalePlanRow)
            .where(ScalePlanRow.job_id.in_(chunk), ScalePlanRow.status == PlanStatus.applied.value)
            .order_by(ScalePlanRow.job_id, ScalePlanRow.updated_at, ScalePlanRow.id)
        ).all()
        for job_id, group in groupby(plans, key=lambda p: p.job_id):
            roles = dict(submitted.get(job_id) or {})
            count, core_h, gib_h, gpu_h = 0, 0.0, 0.0, 0.0
            for plan in group:
                after = {**roles, **plan.body.roles}
                when = as_utc(plan.applied_at or plan.updated_at)
                hours = max((ended[job_id] - when).total_seconds() / 3600.0, 0.0)
                before_totals, after_totals = _totals(roles), _totals(after)
                core_h += (before_totals[0] - after_totals[0]) * hours
                gib_h += (before_totals[1] - after_totals[1]) / 1024.0 * hours
                gpu_h += (before_totals[2] - after_totals[2]) * hours
                count += 1
                roles = after
            found[job_id] = (count, core_h, gib_h, gpu_h)
    return found


def _totals(roles: dict[str, RoleSpec]) -> tuple[float, float, float]:
    """Cores, MiB and GPUs of every role (count x size; an open field counts 0)."""
    cpu = memory = gpu = 0.0
    for spec in roles.values():
        count = spec.count or 0
        cpu += count * (spec.cpu or 0.0)
        memory += count * (spec.memory_mib or 0.0)
        gpu += count * (spec.gpu or 0.0)
    return cpu, memory, gpu
