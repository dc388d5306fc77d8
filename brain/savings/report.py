"""What Brain's defaults would have allocated for a site's finished jobs, and what applied
plans saved.

For every finished job of the window (see ``brain.replay.site_runs``):

- *requested* and *used*: the main role's resource-hours from its summary;
- *every role's requested and used* (``all_roles_*``): the whole job's resource-hours from
  its summary, as the console and the portraits count them;
- *Brain*: the job's peak node replayed through Brain's default pipeline (create stage
  from the earlier runs of its group in its namespace, as its plans are sized unless
  ``BRAIN_HISTORY_ACROSS_NAMESPACES`` pools them; running stage every ``cadence_s``;
  OOM kills answered by the OOM stage), its mean allocation times the role's nodes and
  run time; GPUs sized per card from the role's measured GPU use
  (``brain.savings.gpu``). A job without stored samples is sized by the create stage
  alone and counted as not replayed;
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
from sqlalchemy import func, select

from brain.config import Settings
from brain.costs import Prices
from brain.db.engine import ReadSession
from brain.db.models import JobRow, JobSummaryRow, ScalePlanRow
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
from brain.replay.runs import Run
from brain.replay.site_runs import SiteRun, histories, load_runs, load_series
from brain.savings.gpu import DEFAULT_TARGET, gpu_target, replayed_gpus

BY = ("namespace", "group")
DEFAULT_SAMPLE_S = 60.0


# The master's running-stage cadence of the stored replays (the report's default).
STORED_CADENCE_S = 300.0


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
    # Every role's hours (the job summary's, as the console shows), beside the main role's.
    all_roles_requested_core_h: float = 0.0
    all_roles_used_core_h: float = 0.0
    all_roles_requested_gib_h: float = 0.0
    all_roles_used_gib_h: float = 0.0
    all_roles_requested_gpu_h: float = 0.0
    all_roles_used_gpu_h: float = 0.0
    # Dollars at the prices in effect (None: nothing priced); unpriced resources add nothing.
    requested_usd: float | None = None
    used_usd: float | None = None
    brain_usd: float | None = None
    plans_saved_usd: float | None = None
    all_roles_requested_usd: float | None = None
    all_roles_used_usd: float | None = None

    @property
    def brain_ooms_per_1000h(self) -> float | None:
        if self.replayed_node_hours <= 0:
            return None
        return 1000.0 * self.brain_ooms / self.replayed_node_hours

    def add(self, other: SavingsRow) -> None:
        for f in fields(self):
            if f.name == "key":
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if mine is None or theirs is None:
                total = theirs if mine is None else mine
            else:
                total = mine + theirs
            setattr(self, f.name, total)

    def priced(self, prices: Prices, gpu_type: str | None) -> None:
        """Sets the dollar figures of these hours, GPUs at ``gpu_type``'s price."""
        if not prices.configured:
            return
        gpu = prices.gpu_price(gpu_type)
        for field, core_h, gib_h, gpu_h in (
            ("requested_usd", self.requested_core_h, self.requested_gib_h, self.requested_gpu_h),
            ("used_usd", self.used_core_h, self.used_gib_h, self.used_gpu_h),
            ("brain_usd", self.brain_core_h, self.brain_gib_h, self.brain_gpu_h),
            (
                "plans_saved_usd",
                self.plans_saved_core_h,
                self.plans_saved_gib_h,
                self.plans_saved_gpu_h,
            ),
            (
                "all_roles_requested_usd",
                self.all_roles_requested_core_h,
                self.all_roles_requested_gib_h,
                self.all_roles_requested_gpu_h,
            ),
            (
                "all_roles_used_usd",
                self.all_roles_used_core_h,
                self.all_roles_used_gib_h,
                self.all_roles_used_gpu_h,
            ),
        ):
            pairs = ((prices.core_hour_usd, core_h), (prices.gib_hour_usd, gib_h), (gpu, gpu_h))
            setattr(self, field, sum(p * h for p, h in pairs if p is not None))

    def as_dict(self) -> dict:
        return asdict(self) | {"brain_ooms_per_1000h": self.brain_ooms_per_1000h}


@dataclass(frozen=True)
class Savings:
    since: datetime
    by: str
    rows: list[SavingsRow]
    total: SavingsRow
    priced: bool = False
    # How the dollars' prices are named ("default prices (source: ...)"); None: unpriced.
    price_label: str | None = None


# Per (row key, GPU type): the sums money is computed from (GPU prices differ by type).
Parts = dict[tuple[str, str | None], SavingsRow]


def savings(
    session: ReadSession,
    registry: OptimizerRegistry,
    settings: Settings,
    since: datetime,
    *,
    by: str = "namespace",
    namespaces: Sequence[str] | None = None,
    cadence_s: float = STORED_CADENCE_S,
    progress: Callable[[int, int], None] | None = None,
) -> Savings:
    """The savings report of the jobs that ended since ``since``, grouped ``by``.

    At the stored cadence, jobs whose replay is stored with their summary are summed
    from it (``brain.savings.stored``) and only the others are replayed now; at another
    cadence every job is replayed."""
    if by not in BY:
        raise ValueError(f"by is one of {', '.join(BY)}")
    parts: Parts = {}
    stored = cadence_s == STORED_CADENCE_S
    if stored:
        _sum_stored(session, since, by, namespaces, parts)
    if not stored or _window_jobs(session, since, namespaces, replayed=False):
        _replay_now(session, registry, settings, since, by, namespaces, cadence_s, progress, parts)
    _sum_all_roles(session, since, by, namespaces, parts)
    keys = _keys(session, since, by, namespaces)
    ended = _window_jobs(session, since, namespaces, replayed=None)
    for job_id, saved in _plan_savings(session, ended).items():
        row = parts.setdefault(keys[job_id], SavingsRow(keys[job_id][0]))
        row.plans_applied += saved[0]
        row.plans_saved_core_h += saved[1]
        row.plans_saved_gib_h += saved[2]
        row.plans_saved_gpu_h += saved[3]
    return _report(since, by, parts, settings.prices)


def _report(since: datetime, by: str, parts: Parts, prices: Prices) -> Savings:
    rows: dict[str, SavingsRow] = {}
    for (key, gpu_type), part in parts.items():
        part.priced(prices, gpu_type)
        rows.setdefault(key, SavingsRow(key)).add(part)
    ordered = sorted(
        rows.values(), key=lambda r: (-(r.requested_gib_h + r.requested_core_h), r.key)
    )
    total = SavingsRow("total")
    total.priced(prices, None)  # $0, not "no price", when no job ended in the window
    for row in ordered:
        total.add(row)
    label = prices.label if prices.configured else None
    return Savings(since, by, ordered, total, priced=prices.configured, price_label=label)


def _key_column(by: str):
    return JobSummaryRow.namespace if by == "namespace" else JobSummaryRow.group_key


def _in_window(query, since: datetime, namespaces: Sequence[str] | None):
    query = query.where(JobSummaryRow.final.is_(True), JobSummaryRow.ended_at >= since)
    if namespaces is not None:
        query = query.where(JobSummaryRow.namespace.in_(list(namespaces)))
    return query


def _window_jobs(
    session: ReadSession, since: datetime, namespaces: Sequence[str] | None, replayed: bool | None
) -> dict[int, datetime]:
    """Job id -> end of the window's jobs; ``replayed``: only those whose replay is (not)
    stored (None: all)."""
    query = _in_window(select(JobSummaryRow.job_id, JobSummaryRow.ended_at), since, namespaces)
    if replayed is not None:
        stored = JobSummaryRow.savings_computed_at
        query = query.where(stored.is_not(None) if replayed else stored.is_(None))
    return {job_id: as_utc(ended) for job_id, ended in session.execute(query)}


def _keys(
    session: ReadSession, since: datetime, by: str, namespaces: Sequence[str] | None
) -> dict[int, tuple[str, str | None]]:
    query = select(JobSummaryRow.job_id, _key_column(by), JobSummaryRow.gpu_type)
    found = session.execute(_in_window(query, since, namespaces))
    return {job_id: (key or "-", gpu_type) for job_id, key, gpu_type in found}


# SavingsRow field -> stored job summary column.
STORED = {
    "node_hours": JobSummaryRow.savings_node_hours,
    "requested_core_h": JobSummaryRow.savings_requested_core_hours,
    "used_core_h": JobSummaryRow.savings_used_core_hours,
    "brain_core_h": JobSummaryRow.savings_brain_core_hours,
    "requested_gib_h": JobSummaryRow.savings_requested_gib_hours,
    "used_gib_h": JobSummaryRow.savings_used_gib_hours,
    "brain_gib_h": JobSummaryRow.savings_brain_gib_hours,
    "requested_gpu_h": JobSummaryRow.savings_requested_gpu_hours,
    "used_gpu_h": JobSummaryRow.savings_used_gpu_hours,
    "brain_gpu_h": JobSummaryRow.savings_brain_gpu_hours,
    "replayed_node_hours": JobSummaryRow.savings_replayed_node_hours,
    "brain_ooms": JobSummaryRow.savings_brain_ooms,
}


def _sum_stored(
    session: ReadSession, since: datetime, by: str, namespaces: Sequence[str] | None, parts: Parts
) -> None:
    """Adds the stored replays of the window's jobs, summed by the database."""
    key = _key_column(by)
    replayed = JobSummaryRow.savings_replayed_node_hours > 0
    # A job without a main role (no nodes) is stored with no hours, and not counted.
    query = select(
        key,
        JobSummaryRow.gpu_type,
        func.count(JobSummaryRow.savings_node_hours),
        func.count().filter(replayed),
        func.count().filter(JobSummaryRow.savings_brain_ooms > 0),
        *(func.sum(column) for column in STORED.values()),
    ).where(JobSummaryRow.savings_computed_at.is_not(None))
    query = _in_window(query, since, namespaces).group_by(key, JobSummaryRow.gpu_type)
    for name, gpu_type, jobs, replayed_jobs, with_oom, *sums in session.execute(query):
        row = SavingsRow(name or "-", jobs=jobs, replayed_jobs=replayed_jobs)
        row.brain_jobs_with_oom = with_oom
        for field, value in zip(STORED, sums, strict=True):
            setattr(row, field, type(getattr(row, field))(value or 0))
        parts.setdefault((row.key, gpu_type), SavingsRow(row.key)).add(row)


# SavingsRow field -> the job summary's every-role column.
ALL_ROLES = {
    "all_roles_requested_core_h": JobSummaryRow.requested_core_hours,
    "all_roles_used_core_h": JobSummaryRow.used_core_hours,
    "all_roles_requested_gib_h": JobSummaryRow.requested_gib_hours,
    "all_roles_used_gib_h": JobSummaryRow.used_gib_hours,
    "all_roles_requested_gpu_h": JobSummaryRow.requested_gpu_hours,
    "all_roles_used_gpu_h": JobSummaryRow.used_gpu_hours,
}


def _sum_all_roles(
    session: ReadSession, since: datetime, by: str, namespaces: Sequence[str] | None, parts: Parts
) -> None:
    """Adds every role's hours of the window's jobs (stored or replayed now alike)."""
    key = _key_column(by)
    query = select(key, JobSummaryRow.gpu_type, *(func.sum(c) for c in ALL_ROLES.values()))
    query = _in_window(query, since, namespaces).group_by(key, JobSummaryRow.gpu_type)
    for name, gpu_type, *sums in session.execute(query):
        row = SavingsRow(name or "-")
        for field, value in zip(ALL_ROLES, sums, strict=True):
            setattr(row, field, float(value or 0))
        parts.setdefault((row.key, gpu_type), SavingsRow(row.key)).add(row)


def _replay_now(
    session: ReadSession,
    registry: OptimizerRegistry,
    settings: Settings,
    since: datetime,
    by: str,
    namespaces: Sequence[str] | None,
    cadence_s: float,
    progress: Callable[[int, int], None] | None,
    parts: Parts,
) -> None:
    """Adds the window's jobs without a stored replay (every job when ``cadence_s`` is not
    the stored one), replayed now."""
    stored_only = cadence_s == STORED_CADENCE_S
    runs = load_runs(session, since, namespaces=namespaces)
    window = [r for r in runs if r.in_window and not (stored_only and r.replayed)]
    series = load_series(session, [r.peak_node_id for r in window if r.peak_node_id is not None])
    loop = BrainLoop(registry, settings)
    harness = HarnessSettings(cadence_s=cadence_s)
    target = gpu_target(registry, settings)
    done = 0
    for mine in histories(runs, settings.history_across_namespaces):
        for position, run in enumerate(mine):
            if not run.in_window or (stored_only and run.replayed):
                continue
            history = [r.run for r in mine[:position]]
            key = (run.namespace or "-") if by == "namespace" else run.group_key
            found = job_savings(run, history, series.get(run.peak_node_id), loop, harness, target)
            parts.setdefault((key, run.gpu_type), SavingsRow(key)).add(found)
            done += 1
            if progress is not None:
                progress(done, len(window))


def job_savings(
    run: SiteRun,
    history: Sequence[Run],
    series,
    loop: BrainLoop,
    harness: HarnessSettings,
    gpu_target: float = DEFAULT_TARGET,
) -> SavingsRow:
    """One job's figures: its main role's hours, and Brain's replayed on ``series``
    (memory and CPU) and on its measured GPU use (``brain.savings.gpu``)."""
    row = SavingsRow("")
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
    if run.gpu_request > 0:
        gpus = replayed_gpus(
            run.gpu_request,
            run.gpu_util_mean,
            run.gpu_memory_max_mib,
            run.gpu_memory_total_mib,
            gpu_target,
        )
        # The requested hours' own basis (the sampled span), at Brain's cards per node.
        row.brain_gpu_h += run.requested_gpu_h * gpus / run.gpu_request
    else:
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
        return row
    outcome: RunOutcome = simulate(samples, policy, harness)
    row.replayed_jobs += 1
    # The replayed node's mean allocation (re-runs included) over the role's node-hours.
    row.brain_core_h += outcome.core_h / outcome.hours * node_hours
    row.brain_gib_h += outcome.memory_gib_h / outcome.hours * node_hours
    row.replayed_node_hours += outcome.hours
    row.brain_ooms += outcome.ooms
    row.brain_jobs_with_oom += 1 if outcome.ooms else 0
    return row


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
    session: ReadSession, ended: dict[int, datetime]
) -> dict[int, tuple[int, float, float, float]]:
    """Per job (id -> its end): applied plans, and core-, GiB- and GPU-hours they saved
    (module docstring)."""
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
