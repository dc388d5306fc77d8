"""What a new run should request, by the create-stage optimizers, from related history.

The would-be job is a synthetic ``JobView``: the keys asked about, with the roles,
strategy and limits of the most recent related run (none without history). The
create stage's pipeline runs on it exactly as for a real job (the same
``run_stage``); what the optimizers leave open keeps the last run's value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from brain.config import Settings
from brain.db.models import JobRow, JobSummaryRow
from brain.domain import (
    ROLE_CHIEF,
    ROLE_EVALUATOR,
    ROLE_PS,
    ROLE_WORKER,
    JobStatus,
    Limits,
    RoleSpec,
    Stage,
    Strategy,
    default_group_key,
    utcnow,
)
from brain.history.plausible import SECONDS_PER_DAY
from brain.history.related import RelatedQuery
from brain.optimizing import (
    HistoricalJob,
    JobView,
    OptimizerContext,
    OptimizerRegistry,
    Reason,
)
from brain.optimizing.pipeline import run_stage
from brain.optimizing.roles import overlay_roles
from brain.optimizing.sizing_model import SizingModel, role_history
from brain.summaries.store import fresh_related

# Runs from which a suggestion is considered measured rather than tentative.
CONFIDENT_RUNS = 3
# A past peak at least this share of the suggested memory leaves too little room to
# call the suggestion firm, however many runs it rests on.
TIGHT_PEAK_SHARE = 0.95
ROLE_ORDER = (ROLE_PS, ROLE_CHIEF, ROLE_WORKER, ROLE_EVALUATOR)
SUGGESTION_UID = "(new run)"


@dataclass(frozen=True)
class SuggestionQuery:
    user: str | None = None
    name: str | None = None
    dataset: str | None = None
    group_key: str | None = None
    gpu_type: str | None = None

    @property
    def effective_group_key(self) -> str | None:
        if self.group_key is not None:
            return self.group_key
        if self.user is not None and self.name is not None:
            return default_group_key(self.user, self.name)
        return None

    def describe(self) -> str:
        given = [
            ("user", self.user),
            ("name", self.name),
            ("dataset", self.dataset),
            ("group", self.group_key),
            ("gpu_type", self.gpu_type),
        ]
        return ", ".join(f"{k} {v}" for k, v in given if v is not None)


@dataclass(frozen=True)
class RoleSuggestion:
    role: str
    count: int | None
    cpu_request: float | None
    cpu_limit: float | None
    memory_mib: float | None
    gpu: float | None
    oom_risk: float | None = None  # probability the next run's memory peak exceeds memory_mib


@dataclass(frozen=True)
class BasisRun:
    uid: str
    name: str
    finished_at: datetime | None
    run_seconds: float | None  # None: unknown (no started_at and no samples)
    run_length_from: str | None  # started_at | first_sample | None
    # With the uid, the stored job: uids are unique per namespace only.
    namespace: str | None


@dataclass(frozen=True)
class Basis:
    """Which past runs were used, matched how, and how far to trust the result."""

    match: str | None
    runs: list[BasisRun]
    window_days: int
    confidence: str  # none | low | high
    note: str


@dataclass(frozen=True)
class Suggestion:
    roles: list[RoleSuggestion]
    basis: Basis
    reasons: list[Reason]


def suggest(
    session: Session,
    registry: OptimizerRegistry,
    settings: Settings,
    query: SuggestionQuery,
    now: datetime | None = None,
    sizing_model: SizingModel | None = None,
) -> Suggestion:
    now = now or utcnow()
    related_query = RelatedQuery(
        user=query.user,
        dataset=query.dataset,
        group_key=query.effective_group_key,
        name=query.name,
        gpu_type=query.gpu_type,
        min_run_s=settings.history_min_run_s,
        before=now,
        window_days=settings.history_window_days,
        limit=settings.history_jobs,
        max_run_s=settings.history_max_run_days * SECONDS_PER_DAY,
    )
    # A related run that finished moments ago has no summary yet: it is written now.
    related = fresh_related(session, related_query)
    template = related.jobs[0].job if related.jobs else None
    job = JobView(
        uid=SUGGESTION_UID,
        name=query.name or (template.name if template else ""),
        user=query.user or (template.user if template else ""),
        dataset=query.dataset,
        group_key=query.effective_group_key or (template.group_key if template else ""),
        strategy=template.strategy if template else Strategy.ps,
        status=JobStatus.pending,
        limits=template.limits if template else Limits(),
        roles=dict(template.roles) if template else {},
        gpu_type=query.gpu_type or (template.gpu_type if template else None),
        created_at=now,
    )
    context = OptimizerContext(
        stage=Stage.create,
        now=now,
        job=job,
        history=related.jobs,
        node_max=settings.node_max,
        sizing_model=sizing_model,
    )
    proposal = run_stage(registry, Stage.create, context, settings).proposal
    runs = [
        BasisRun(
            h.job.uid,
            h.job.name,
            h.job.finished_at,
            h.duration_s,
            h.run_length_from,
            h.job.namespace,
        )
        for h in related.jobs
    ]
    roles = _roles(overlay_roles(job.roles, proposal.roles))
    if sizing_model is not None:
        roles = [_with_risk(r, sizing_model, related.jobs, job.roles.get(r.role)) for r in roles]
    basis = _basis(related.match, runs, query, settings.history_window_days)
    cautions = _cautions(roles, related.jobs, _oom_kills(session, related.jobs))
    if cautions and basis.confidence == "high":
        basis = replace(basis, confidence="low")
    if cautions:
        basis = replace(basis, note=f"{basis.note}; {'; '.join(cautions)}")
    return Suggestion(roles=roles, basis=basis, reasons=list(proposal.reasons))


def _oom_kills(session: Session, history: list[HistoricalJob]) -> int:
    """OOM kills the basis runs' summaries count."""
    if not history:
        return 0
    runs = {(h.job.uid, h.job.namespace) for h in history}
    uids = sorted({uid for uid, _ in runs})
    found = session.execute(_oom_kills_by_uid(), {"uids": uids})
    return sum(row.oom_count or 0 for row in found if (row.uid, row.namespace) in runs)


@cache
def _oom_kills_by_uid() -> Select:
    # The runs by the jobs' unique (uid, namespace) index and the summaries' primary key
    # (job_summaries has no index on uid: matching uids there read the whole table); a
    # uid of another namespace is dropped after.
    return (
        select(JobRow.uid, JobRow.namespace, JobSummaryRow.oom_count)
        .join(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
        .where(JobRow.uid.in_(bindparam("uids", expanding=True)))
    )


def _cautions(
    roles: list[RoleSuggestion], history: list[HistoricalJob], oom_kills: int
) -> list[str]:
    """Why the suggestion is less sure than its number of runs says: OOM kills in the
    basis runs, or a role whose memory peak came within 5 % of the suggested memory."""
    cautions = []
    if oom_kills:
        cautions.append(f"{oom_kills} OOM kill{'s' if oom_kills > 1 else ''} in these runs")
    for role in roles:
        peaks = [n.memory_max_mib for h in history for n in h.role_nodes(role.role)]
        if not peaks or not role.memory_mib:
            continue
        peak = max(peaks)
        if peak >= TIGHT_PEAK_SHARE * role.memory_mib:
            cautions.append(
                f"{role.role} peaked at {peak:.0f} MiB, {peak / role.memory_mib:.0%} of the "
                f"suggested {role.memory_mib:g} MiB (less than {1 - TIGHT_PEAK_SHARE:.0%} "
                "room)"
            )
    return cautions


def _roles(roles: dict[str, RoleSpec]) -> list[RoleSuggestion]:
    """The roles in the usual order (ps, chief, worker, evaluator, then by name)."""
    names = sorted(
        roles, key=lambda r: (ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER), r)
    )
    return [
        RoleSuggestion(
            role=role,
            count=roles[role].count,
            cpu_request=roles[role].cpu,
            cpu_limit=roles[role].cpu_limit,
            memory_mib=roles[role].memory_mib,
            gpu=roles[role].gpu,
        )
        for role in names
    ]


def _with_risk(
    suggestion: RoleSuggestion,
    model: SizingModel,
    history: list[HistoricalJob],
    last_run: RoleSpec | None,
) -> RoleSuggestion:
    """The suggestion with the model's calibrated risk that the next run's memory peak
    exceeds its memory, whichever optimizer sized it."""
    if suggestion.memory_mib is None:
        return suggestion
    request = last_run.memory_mib if last_run is not None else None
    forecast = model.forecast("memory", role_history(history, suggestion.role, "memory", request))
    if forecast is None:
        return suggestion
    return replace(suggestion, oom_risk=round(forecast.risk_of(suggestion.memory_mib), 6))


def _basis(match: str | None, runs: list[BasisRun], query: SuggestionQuery, days: int) -> Basis:
    if not runs:
        note = (
            f"no succeeded run of {query.describe()} in the last {days} days: "
            "these are the optimizers' defaults, not measurements"
        )
        return Basis(match, runs, days, "none", note)
    # A run of unknown length cannot pass the rules that need a long run (gpu_cpu's 30
    # minutes): it does not make the suggestion measured.
    measured = [r for r in runs if r.run_seconds is not None]
    plural = "s" if len(runs) > 1 else ""
    lengths = _length_note(runs, measured)
    if len(measured) < CONFIDENT_RUNS:
        note = (
            f"only {len(measured)} past run{'s' if len(measured) != 1 else ''} of known length "
            f"(matched by {match}{lengths}): tentative, firmer after {CONFIDENT_RUNS} runs"
        )
        return Basis(match, runs, days, "low", note)
    note = f"{len(runs)} past run{plural} matched by {match} in the last {days} days{lengths}"
    return Basis(match, runs, days, "high", note)


def _length_note(runs: list[BasisRun], measured: list[BasisRun]) -> str:
    """Say how run lengths were known where it is not the job's own ``started_at``."""
    parts = []
    from_samples = sum(1 for r in measured if r.run_length_from == "first_sample")
    if from_samples:
        parts.append(f"{from_samples} without started_at, timed from their first sample")
    if len(measured) < len(runs):
        parts.append(f"{len(runs) - len(measured)} of unknown length (no started_at, no samples)")
    return "; " + "; ".join(parts) if parts else ""
