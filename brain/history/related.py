"""Related finished jobs as optimizers see them, built from summaries (not raw samples)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, ScalarSelect, and_, or_, select, union_all
from sqlalchemy.orm import Session

from brain.db.models import JobRow, JobSummaryRow, NodeSummaryRow
from brain.domain import JobStatus, Resources, utcnow
from brain.history.views import job_view
from brain.optimizing import HistoricalJob, NodeUsage

MATCH_USER_DATASET = "user+dataset"
MATCH_GROUP = "group"
MATCH_NAME = "name"
MATCH_USER = "user"


@dataclass(frozen=True)
class Related:
    """Related jobs, most recent first, and the rule that found them (``None``: none did)."""

    match: str | None
    jobs: list[HistoricalJob]


def related_history(
    session: Session,
    *,
    user: str | None,
    dataset: str | None,
    group_key: str | None,
    name: str | None,
    gpu_type: str | None = None,
    before: datetime | None = None,
    window_days: int,
    limit: int,
) -> list[HistoricalJob]:
    """Up to ``limit`` related succeeded jobs, most recent first, for ``context.history``.

    Related means, by the first rule that finds any job: the same ``user`` and
    ``dataset``; else the same ``group_key``; else the same ``name`` (any user). A rule
    whose inputs are ``None`` is skipped. When ``user`` is the only key given, related
    means the same user (any job of theirs). Only jobs that succeeded, finished within
    ``window_days`` before ``before`` (default: now) and have a summary count; with
    ``gpu_type`` only jobs on that GPU type. Each job's ``nodes`` are its node summaries
    (nodes without samples left out), so this works after raw samples were deleted.
    """
    return find_related(
        session,
        user=user,
        dataset=dataset,
        group_key=group_key,
        name=name,
        gpu_type=gpu_type,
        before=before,
        window_days=window_days,
        limit=limit,
    ).jobs


def find_related(
    session: Session,
    *,
    user: str | None,
    dataset: str | None,
    group_key: str | None,
    name: str | None,
    gpu_type: str | None = None,
    before: datetime | None = None,
    window_days: int,
    limit: int,
) -> Related:
    """``related_history`` that also says which rule matched."""
    before = before or utcnow()
    rules = _rules(JobSummaryRow, user, dataset, group_key, name)
    window = [
        JobSummaryRow.status == JobStatus.succeeded.value,
        JobSummaryRow.ended_at >= before - timedelta(days=window_days),
        JobSummaryRow.ended_at < before,
    ]
    if gpu_type is not None:
        window.append(JobSummaryRow.gpu_type == gpu_type)
    for match, conditions in rules:
        ids = list(
            session.scalars(
                select(JobSummaryRow.job_id)
                .where(*conditions, *window)
                .order_by(JobSummaryRow.ended_at.desc(), JobSummaryRow.job_id.desc())
                .limit(limit)
            )
        )
        if ids:
            return Related(match, historical_jobs(session, ids))
    return Related(None, [])


def _rules(
    table: type[JobRow] | type[JobSummaryRow],
    user: str | None,
    dataset: str | None,
    group_key: str | None,
    name: str | None,
) -> list[tuple[str, list[ColumnElement[bool]]]]:
    """The relatedness rules, strongest first, on a table with the job's keys."""
    rules: list[tuple[str, list[ColumnElement[bool]]]] = []
    if user is not None and dataset is not None:
        rules.append((MATCH_USER_DATASET, [table.user == user, table.dataset == dataset]))
    if group_key is not None:
        rules.append((MATCH_GROUP, [table.group_key == group_key]))
    if name is not None:
        rules.append((MATCH_NAME, [table.name == name]))
    if user is not None and not rules:
        # Only the user is known (a suggestion asked by user alone): their own runs.
        rules.append((MATCH_USER, [table.user == user]))
    return rules


def unsummarized_related(
    session: Session,
    *,
    user: str | None,
    dataset: str | None,
    group_key: str | None,
    name: str | None,
    gpu_type: str | None = None,
    before: datetime | None = None,
    window_days: int,
    limit: int,
) -> list[JobRow]:
    """Succeeded jobs that a rule of ``find_related`` matches but that have no final
    summary yet (a finish reported moments ago: its summary is written after that
    response), up to ``limit`` per rule, newest first."""
    before = before or utcnow()
    window = [
        JobRow.status == JobStatus.succeeded.value,
        JobRow.summarized_at.is_(None),
        # Without finished_at a summary ends at the last sample: let the summary decide.
        or_(
            JobRow.finished_at.is_(None),
            and_(
                JobRow.finished_at >= before - timedelta(days=window_days),
                JobRow.finished_at < before,
            ),
        ),
    ]
    if gpu_type is not None:
        window.append(JobRow.gpu_type == gpu_type)
    per_rule = [
        select(JobRow.id).where(*conditions, *window).order_by(JobRow.id.desc()).limit(limit)
        for _, conditions in _rules(JobRow, user, dataset, group_key, name)
    ]
    per_rule = [select(rule.subquery().c.id) for rule in per_rule]  # SQLite: no (SELECT) UNION
    if not per_rule:
        return []
    # Every rule in one statement: this runs before each suggestion and create stage,
    # and usually finds nothing; one round trip instead of one per rule.
    ids = union_all(*per_rule).subquery()
    query = select(JobRow).where(JobRow.id.in_(select(ids.c.id))).order_by(JobRow.id.desc())
    return list(session.scalars(query))


def historical_jobs(session: Session, job_ids: list[int]) -> list[HistoricalJob]:
    """``HistoricalJob`` of each id, in the order given."""
    jobs, lengths = {}, {}
    for job, run_seconds in session.execute(
        select(JobRow, _measured_run_seconds()).where(JobRow.id.in_(job_ids))
    ):
        jobs[job.id] = job
        lengths[job.id] = run_seconds
    nodes: dict[int, list[NodeUsage]] = {job_id: [] for job_id in job_ids}
    rows = session.execute(
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
        .where(NodeSummaryRow.job_id.in_(job_ids), NodeSummaryRow.samples > 0)
        .order_by(NodeSummaryRow.job_id, NodeSummaryRow.node_id)
    )
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
        HistoricalJob(job_view(jobs[i]), tuple(nodes[i]), lengths.get(i))
        for i in job_ids
        if i in jobs
    ]


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
