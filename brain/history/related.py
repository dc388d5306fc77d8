"""Related finished jobs as optimizers see them, built from summaries (not raw samples)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache

from sqlalchemy import (
    ColumnElement,
    CompoundSelect,
    Integer,
    ScalarSelect,
    Select,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    union,
)
from sqlalchemy.orm import Session

from brain.db.models import JobRow, JobSummaryRow, NodeSummaryRow
from brain.domain import JobStatus, Resources, utcnow
from brain.history.plausible import DEFAULT_MAX_RUN_S, believed
from brain.history.views import job_view
from brain.optimizing import HistoricalJob, NodeUsage

MATCH_USER_DATASET = "user+dataset"
MATCH_GROUP = "group"
MATCH_NAME = "name"
MATCH_USER = "user"


@dataclass(frozen=True)
class RelatedQuery:
    """What relates past runs to a job: its keys, the window and how many runs."""

    user: str | None
    dataset: str | None
    group_key: str | None
    name: str | None
    window_days: int
    limit: int
    gpu_type: str | None = None
    # Beside the newest ``limit`` runs, the newest ``limit`` measured at least this long
    # (an optimizer that needs long runs finds them behind newer short ones).
    min_run_s: float = 0.0
    # The window ends here (default: now).
    before: datetime | None = None
    # Only runs in these namespaces (``None`` in the set: runs registered without one);
    # ``None``: every namespace. See ``brain.history.scope``.
    namespaces: frozenset[str | None] | None = None
    # Longer runs are not believed (brain.history.plausible).
    max_run_s: float = DEFAULT_MAX_RUN_S


@dataclass(frozen=True)
class Related:
    """Related jobs, most recent first, and the rule that found them (``None``: none did).

    ``unsummarized``: succeeded jobs a rule matches that have no final summary yet (a
    finish reported moments ago: its summary is written after that response), newest
    first; ``jobs`` leaves them out until they are summarized.
    """

    match: str | None
    jobs: list[HistoricalJob]
    unsummarized: list[JobRow] = field(default_factory=list)


# The rule number of a job found without a final summary.
UNSUMMARIZED = -1


def find_related(session: Session, query: RelatedQuery) -> Related:
    """Up to ``limit`` related succeeded jobs, most recent first (``context.history``),
    the rule that found them, and the related jobs that lack a summary.

    Related means, by the first rule that finds any job: the same ``user`` and
    ``dataset``; else the same ``group_key``; else the same ``name`` (any user). A rule
    whose inputs are ``None`` is skipped. When ``user`` is the only key given, related
    means the same user (any job of theirs). Only jobs that succeeded, finished within
    ``window_days`` before ``before`` (default: now) and have a summary count; with
    ``gpu_type`` only jobs on that GPU type (filtered before the newest ``limit`` are
    taken). Beside the newest ``limit`` runs come the newest ``limit`` runs of at least
    ``min_run_s``, so up to twice ``limit`` jobs. Each job's ``nodes`` are its node summaries
    (nodes without samples left out), so this works after raw samples were deleted.

    Two statements: one finds the jobs of every rule and the unsummarized ones at once
    (this runs before each suggestion and create stage, and the first rule usually
    matches), the other reads the chosen jobs' node summaries.
    """
    rules = _rule_names(query)
    if not rules or query.namespaces == frozenset():
        return Related(None, [])
    before = query.before or utcnow()
    scope = _scope(query.namespaces)
    rows = session.execute(
        _statement(rules, query.gpu_type is not None, scope),
        {
            "namespaces": sorted(ns for ns in query.namespaces or () if ns is not None),
            "user": query.user,
            "dataset": query.dataset,
            "group_key": query.group_key,
            "name": query.name,
            "gpu_type": query.gpu_type,
            "since": before - timedelta(days=query.window_days),
            "before": before,
            "limit": query.limit,
            "min_run_s": query.min_run_s,
            "max_run_s": query.max_run_s,
        },
    ).all()
    unsummarized = {job.id: job for job, _, rule, _ in rows if rule == UNSUMMARIZED}
    unsummarized_jobs = sorted(unsummarized.values(), key=lambda job: job.id, reverse=True)
    # The statement returns the first matching rule's jobs only.
    chosen = sorted(
        (row for row in rows if row.rule != UNSUMMARIZED),
        key=lambda row: (row.ended_at, row[0].id),
        reverse=True,
    )
    if not chosen:
        return Related(None, [], unsummarized_jobs)
    jobs = historical_jobs(
        session, [row[0] for row in chosen], {row[0].id: row[1] for row in chosen}
    )
    return Related(rules[chosen[0].rule], jobs, unsummarized_jobs)


# How a statement limits the namespaces: not at all, to a list, to jobs without one, or
# to both (a NULL never matches IN, hence the separate cases).
_EVERY, _LISTED, _NONE, _LISTED_OR_NONE = "every", "listed", "none", "listed_or_none"


def _scope(namespaces: frozenset[str | None] | None) -> str:
    if namespaces is None:
        return _EVERY
    if None not in namespaces:
        return _LISTED
    return _NONE if len(namespaces) == 1 else _LISTED_OR_NONE


def _in_scope(table: type[JobRow] | type[JobSummaryRow], scope: str) -> list[ColumnElement[bool]]:
    listed = table.namespace.in_(bindparam("namespaces", expanding=True))
    return {
        _EVERY: [],
        _LISTED: [listed],
        _NONE: [table.namespace.is_(None)],
        _LISTED_OR_NONE: [or_(listed, table.namespace.is_(None))],
    }[scope]


@cache
def _statement(rules: tuple[str, ...], by_gpu_type: bool, scope: str) -> Select:
    """The jobs of ``rules`` (names from ``RULES``) and the unsummarized ones, on bound
    parameters: built once per combination, since building and keying the union took
    SQLAlchemy longer than PostgreSQL took to run it."""
    found = _candidates(rules, by_gpu_type, scope).subquery()
    # Only the first rule that found a summarized job is used: the others' jobs are left
    # in PostgreSQL rather than sent and built into ORM rows for nothing.
    first = func.min(case((found.c.rule >= 0, found.c.rule))).over()
    ranked = select(*found.c, first.label("first")).subquery()
    return (
        select(JobRow, _measured_run_seconds(), ranked.c.rule, ranked.c.ended_at)
        .join(ranked, ranked.c.id == JobRow.id)
        .where(or_(ranked.c.rule == ranked.c.first, ranked.c.rule == UNSUMMARIZED))
    )


def _candidates(rules: tuple[str, ...], by_gpu_type: bool, scope: str) -> CompoundSelect:
    """Per rule, up to ``limit`` summarized jobs (id, rule number, end), newest first;
    and per rule up to ``limit`` jobs without a final summary (rule ``UNSUMMARIZED``)."""
    since, before = bindparam("since"), bindparam("before")
    limit = bindparam("limit", type_=Integer)
    summarized = [
        *_in_scope(JobSummaryRow, scope),
        *believed(),
        JobSummaryRow.status == JobStatus.succeeded.value,
        JobSummaryRow.ended_at >= since,
        JobSummaryRow.ended_at < before,
    ]
    missing = [
        *_in_scope(JobRow, scope),
        JobRow.status == JobStatus.succeeded.value,
        JobRow.summarized_at.is_(None),
        # Without finished_at a summary ends at the last sample: let the summary decide.
        or_(
            JobRow.finished_at.is_(None),
            and_(JobRow.finished_at >= since, JobRow.finished_at < before),
        ),
    ]
    if by_gpu_type:
        summarized.append(JobSummaryRow.gpu_type == bindparam("gpu_type"))
        missing.append(JobRow.gpu_type == bindparam("gpu_type"))
    # The newest long runs are filtered before they are counted: newest runs of any
    # length first would leave older long ones out behind newer short ones.
    long_enough = JobSummaryRow.run_seconds >= bindparam("min_run_s")
    parts = []
    for number, rule in enumerate(rules):
        for length in ([], [long_enough]):
            parts.append(
                select(
                    JobSummaryRow.job_id.label("id"),
                    literal(number).label("rule"),
                    JobSummaryRow.ended_at.label("ended_at"),
                )
                .where(*RULES[rule](JobSummaryRow), *summarized, *length)
                .order_by(JobSummaryRow.ended_at.desc(), JobSummaryRow.job_id.desc())
                .limit(limit)
            )
        parts.append(
            select(
                JobRow.id,
                literal(UNSUMMARIZED).label("rule"),
                JobRow.finished_at.label("ended_at"),
            )
            .where(*RULES[rule](JobRow), *missing)
            .order_by(JobRow.id.desc())
            .limit(limit)
        )
    # SQLite takes no (SELECT ... LIMIT) in a UNION: each part is read from a subquery.
    # UNION, not UNION ALL: a newest run that is also a long one comes once.
    return union(*(select(*part.subquery().c) for part in parts))


# Each rule's conditions on a table with the job's keys (jobs or job_summaries), on
# parameters named after the keys.
RULES: dict[str, Callable[[type[JobRow] | type[JobSummaryRow]], list[ColumnElement[bool]]]] = {
    MATCH_USER_DATASET: lambda t: [t.user == bindparam("user"), t.dataset == bindparam("dataset")],
    MATCH_GROUP: lambda t: [t.group_key == bindparam("group_key")],
    MATCH_NAME: lambda t: [t.name == bindparam("name")],
    MATCH_USER: lambda t: [t.user == bindparam("user")],
}


def _rule_names(query: RelatedQuery) -> tuple[str, ...]:
    """The relatedness rules that apply, strongest first."""
    names = []
    if query.user is not None and query.dataset is not None:
        names.append(MATCH_USER_DATASET)
    if query.group_key is not None:
        names.append(MATCH_GROUP)
    if query.name is not None:
        names.append(MATCH_NAME)
    if query.user is not None and not names:
        # Only the user is known (a suggestion asked by user alone): their own runs.
        names.append(MATCH_USER)
    return tuple(names)


def historical_jobs(
    session: Session, jobs: list[JobRow], run_seconds: dict[int, float | None]
) -> list[HistoricalJob]:
    """``HistoricalJob`` of each job, in the order given, with its node summaries
    (``run_seconds``: each job's measured run length, see ``_measured_run_seconds``)."""
    job_ids = [job.id for job in jobs]
    nodes: dict[int, list[NodeUsage]] = {job_id: [] for job_id in job_ids}
    rows = session.execute(_node_usage(), {"job_ids": job_ids})
    for row in rows:
        nodes[row.job_id].append(
            NodeUsage(
                name=row.name,
                role=row.role,
                requested=Resources(row.cpu_request_cores, row.memory_request_mib, row.gpu_request),
                cpu_mean=row.cpu_mean_cores,
                cpu_max=row.cpu_max_cores,
                cpu_p95=row.cpu_p95_cores,
                memory_mean_mib=row.memory_mean_mib,
                memory_max_mib=row.memory_max_mib,
                gpu_util_mean=row.gpu_util_mean,
                gpu_memory_max_mib=row.gpu_memory_max_mib,
                gpu_memory_total_mib=row.gpu_memory_total_mib,
            )
        )
    return [
        HistoricalJob(job_view(job), tuple(nodes[job.id]), run_seconds.get(job.id)) for job in jobs
    ]


@cache
def _node_usage() -> Select:
    """The node summaries (with samples) of the jobs ``job_ids``, built once like
    ``_statement`` (an expanding IN takes any number of ids)."""
    return (
        select(
            NodeSummaryRow.job_id,
            NodeSummaryRow.name,
            NodeSummaryRow.role,
            NodeSummaryRow.cpu_request_cores,
            NodeSummaryRow.memory_request_mib,
            NodeSummaryRow.gpu_request,
            NodeSummaryRow.cpu_mean_cores,
            NodeSummaryRow.cpu_max_cores,
            NodeSummaryRow.cpu_p95_cores,
            NodeSummaryRow.memory_mean_mib,
            NodeSummaryRow.memory_max_mib,
            NodeSummaryRow.gpu_util_mean,
            NodeSummaryRow.gpu_memory_max_mib,
            NodeSummaryRow.gpu_memory_total_mib,
        )
        .where(
            NodeSummaryRow.job_id.in_(bindparam("job_ids", expanding=True)),
            NodeSummaryRow.samples > 0,
        )
        .order_by(NodeSummaryRow.job_id, NodeSummaryRow.node_id)
    )


def _measured_run_seconds() -> ScalarSelect:
    """Each summarized run's ``run_seconds`` where it is measured: from ``started_at``, or
    from the first sample when the job was registered without one (a run with neither
    has a meaningless 0 there: null, as for a job without a summary)."""
    return (
        select(JobSummaryRow.run_seconds)
        .where(
            JobSummaryRow.job_id == JobRow.id,
            (JobSummaryRow.started_at.is_not(None)) | (JobSummaryRow.samples > 0),
        )
        .scalar_subquery()
    )
