"""Recommended against current: beside each role of a run, what it requested, what it
used and what the suggestion service (the one behind ``GET /api/v1/suggestions`` and the
console's suggestion page) proposes for the next run like it, with the saving and risk.

The recommendation is the suggestion page's own answer for the run's user, name,
dataset and GPU type, so the linked page shows the same numbers and the YAML to paste."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.schemas.portraits import RoleOut
from brain.config import Settings
from brain.db.models import JobRow, JobSummaryRow, RoleSummaryRow
from brain.domain import RoleSpec
from brain.optimizing import OptimizerRegistry
from brain.optimizing.sizing_model import SizingModel
from brain.portraits.suggestions import Suggestion, SuggestionQuery, suggest

# Runs advised on an owner page (its most wasteful, one per kind of run): each is one
# suggestion, so the page stays quick.
OWNER_ADVISED_RUNS = 3


@dataclass(frozen=True)
class RoleAdvice:
    """One role: per node what it asked and used against the recommendation; savings are
    over all its nodes (now: the run's count; next: the suggested count, else the same)."""

    role: str
    nodes_now: int
    nodes_next: int
    cpu_request_cores: float
    cpu_used_mean_cores: float | None
    cpu_used_max_cores: float | None
    cpu_recommended_cores: float | None
    memory_request_mib: float
    memory_used_mean_mib: float | None
    memory_used_max_mib: float | None
    memory_recommended_mib: float | None
    gpu_request: float
    gpu_recommended: float | None
    saves_cpu_cores: float
    saves_memory_mib: float
    saves_gpu: float
    saves_usd_per_day: float | None  # None: no price set
    oom_risk: float | None  # the sizing model's calibrated risk; None without a model
    # The run's memory peak as a share of the recommended memory (above 1: it would OOM).
    peak_share: float | None


@dataclass(frozen=True)
class RunAdvice:
    uid: str
    name: str
    suggest_url: str  # the console's suggestion page for the same query
    confidence: str
    note: str
    roles: list[RoleAdvice]

    @property
    def saves_usd_per_day(self) -> float | None:
        priced = [r.saves_usd_per_day for r in self.roles if r.saves_usd_per_day is not None]
        return sum(priced) if priced else None


def query_of(job: JobRow | JobSummaryRow) -> SuggestionQuery:
    """What the suggestion page is asked for a next run like ``job``."""
    return SuggestionQuery(user=job.user, name=job.name, dataset=job.dataset, gpu_type=job.gpu_type)


def suggest_url(query: SuggestionQuery) -> str:
    fields = {
        "user": query.user,
        "name": query.name,
        "dataset": query.dataset,
        "gpu_type": query.gpu_type,
    }
    return "/ui/suggest?" + urlencode({k: v for k, v in fields.items() if v})


def advise(
    session: Session,
    registry: OptimizerRegistry,
    settings: Settings,
    sizing_model: SizingModel | None,
    job: JobRow,
    roles: list[RoleOut],
) -> RunAdvice:
    """``job``'s roles (as summarized) against the suggestion for its next run."""
    query = query_of(job)
    found = suggest(session, registry, settings, query, sizing_model=sizing_model)
    return compare(job, roles, found, settings, suggest_url(query))


def compare(
    job: JobRow, roles: list[RoleOut], found: Suggestion, settings: Settings, url: str
) -> RunAdvice:
    declared: dict[str, RoleSpec] = dict(job.roles or {})
    proposed = {r.role: r for r in found.roles}
    prices = settings.prices if settings.prices.configured else None
    advised = []
    for role in roles:
        spec = declared.get(role.role)
        nodes_now = spec.count if spec is not None and spec.count else role.node_count
        next_ = proposed.get(role.role)
        nodes_next = next_.count if next_ is not None and next_.count is not None else nodes_now
        cpu_next = next_.cpu_request if next_ is not None else None
        memory_next = next_.memory_mib if next_ is not None else None
        gpu_next = next_.gpu if next_ is not None else None

        cpu = _saved(nodes_now, role.cpu_request_cores, nodes_next, cpu_next)
        memory = _saved(nodes_now, role.memory_request_mib, nodes_next, memory_next)
        gpu = _saved(nodes_now, role.gpu_request, nodes_next, gpu_next)
        peak = role.used.memory_mib.max
        advised.append(
            RoleAdvice(
                role=role.role,
                nodes_now=nodes_now,
                nodes_next=nodes_next,
                cpu_request_cores=role.cpu_request_cores,
                cpu_used_mean_cores=role.used.cpu_cores.mean,
                cpu_used_max_cores=role.used.cpu_cores.max,
                cpu_recommended_cores=cpu_next,
                memory_request_mib=role.memory_request_mib,
                memory_used_mean_mib=role.used.memory_mib.mean,
                memory_used_max_mib=peak,
                memory_recommended_mib=memory_next,
                gpu_request=role.gpu_request,
                gpu_recommended=gpu_next,
                saves_cpu_cores=cpu,
                saves_memory_mib=memory,
                saves_gpu=gpu,
                saves_usd_per_day=(
                    None if prices is None else prices.per_day(cpu, memory, gpu, job.gpu_type)
                ),
                oom_risk=next_.oom_risk if next_ is not None else None,
                peak_share=(peak / memory_next if peak is not None and memory_next else None),
            )
        )
    basis = found.basis
    return RunAdvice(job.uid, job.name, url, basis.confidence, basis.note, advised)


def _saved(nodes_now: int, now: float, nodes_next: int, then: float | None) -> float:
    """All nodes' request now less all nodes' recommendation; a resource the suggestion
    leaves open keeps its size, so it saves only by count."""
    return nodes_now * now - nodes_next * (now if then is None else then)


def owner_advice(
    session: Session,
    registry: OptimizerRegistry,
    settings: Settings,
    sizing_model: SizingModel | None,
    uids: list[str],
    user: str | None,
    group_key: str | None,
    namespace: str | None,
) -> list[RunAdvice]:
    """Advice on an owner's runs ``uids`` (most wasteful first), one per kind of run (the
    same suggestion query), at most OWNER_ADVISED_RUNS."""
    advice: list[RunAdvice] = []
    seen: set[SuggestionQuery] = set()
    for uid in uids:
        if len(advice) >= OWNER_ADVISED_RUNS:
            break
        found = _summarized(session, uid, user, group_key, namespace)
        if found is None:
            continue
        job, roles = found
        query = query_of(job)
        if query in seen:
            continue
        seen.add(query)
        advice.append(advise(session, registry, settings, sizing_model, job, roles))
    return advice


def _summarized(session, uid, user, group_key, namespace):
    """The owner's job ``uid`` with its summarized roles (newest summary), or None."""
    where = [JobSummaryRow.uid == uid]
    if user is not None:
        where.append(JobSummaryRow.user == user)
    if group_key is not None:
        where.append(JobSummaryRow.group_key == group_key)
    if namespace is not None:
        where.append(JobSummaryRow.namespace == namespace)
    row = session.execute(
        select(JobRow, JobSummaryRow.job_id)
        .join(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
        .where(*where)
        .order_by(JobSummaryRow.computed_at.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    job, job_id = row
    stored = session.scalars(
        select(RoleSummaryRow).where(RoleSummaryRow.job_id == job_id).order_by(RoleSummaryRow.role)
    ).all()
    return job, [RoleOut.of(r) for r in stored]
