"""Runs from the Brain database: finished jobs' summaries as the normalized run table.

``DatabaseRuns`` reads the stored job summaries (``job_summaries``, ``role_summaries``,
``node_summaries``), never raw samples, so it works after retention aged them out.
One finished job with a final summary is one run:

| run column | from |
|---|---|
| workload | the job's ``group_key`` (its recurring runs); ``namespace:group_key`` in a namespace |
| start | the job's ``started_at``, else its ``created_at`` |
| seq | order of the jobs by start, then job id |
| duration_h | the summary's ``run_seconds`` (start to ``finished_at``) / 3600 |
| req_cpu, req_memory_mib, req_gpu | the main role's request per node (0: not given) |
| cpu_mean, mem_mean, gpu_util_mean | the main role's mean over the samples of all its nodes |
| cpu_p95, cpu_max, mem_max, gpu_mem_mib_max | the largest per-node value of the main role |
| gpu_mem_total_mib | the card memory the samples report, else ``gpu_memory_mib`` |

The **main role** of a workload is the role holding most of its requested resources
over the runs read: GPU-hours first, then core-hours, then GiB-hours, then the role
name; a single-role job's is its one role. It is chosen once per workload so that
every run of it is compared on the same role; ``role`` fixes it instead. Runs without
that role are left out.

Peaks are per node because a recommendation sizes one node of the role: the node with
the highest 95th percentile (or maximum) is the one a size must cover. Requests of 0
(the role did not say) are missing, like an absent column of a trace; a role that
requests no GPU and has no GPU samples has no GPU columns. Without GPU samples, or
without the card size in them, a GPU role's card has ``gpu_memory_mib``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sqlalchemy import Select, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from brain.db.engine import make_engine
from brain.db.models import JobRow, JobSummaryRow, NodeSummaryRow, RoleSummaryRow
from brain.domain import JobStatus, gpu_cards
from brain.replay.resources import DEFAULT_GPU_MEMORY_MIB
from brain.replay.trace import TraceError, check_normalized
from brain.services.jobs import JobFilters

log = logging.getLogger(__name__)

# Role columns read, under the names the run table or the role choice uses.
ROLE_COLUMNS = {
    "req_cpu": RoleSummaryRow.cpu_request_cores,
    "req_memory_mib": RoleSummaryRow.memory_request_mib,
    "gpu_request": RoleSummaryRow.gpu_request,
    "cpu_mean": RoleSummaryRow.cpu_mean_cores,
    "mem_mean": RoleSummaryRow.memory_mean_mib,
    "gpu_util_mean": RoleSummaryRow.gpu_util_mean,
    "card_mib": RoleSummaryRow.gpu_memory_total_mib,
    "gpu_hours": RoleSummaryRow.requested_gpu_hours,
    "core_hours": RoleSummaryRow.requested_core_hours,
    "gib_hours": RoleSummaryRow.requested_gib_hours,
}
# Per-node peaks: the largest over the role's nodes.
NODE_PEAKS = {
    "cpu_p95": NodeSummaryRow.cpu_p95_cores,
    "cpu_max": NodeSummaryRow.cpu_max_cores,
    "mem_max": NodeSummaryRow.memory_max_mib,
    "gpu_mem_mib_max": NodeSummaryRow.gpu_memory_max_mib,
}
# How the main role is chosen: most requested resource-hours, in this order.
ROLE_WEIGHTS = ("gpu_hours", "core_hours", "gib_hours")


def default_filters() -> JobFilters:
    return JobFilters(status=JobStatus.succeeded)


@dataclass(frozen=True)
class DatabaseRuns:
    """Finished, summarized jobs of the database at ``database_url`` matching ``filters``.

    ``filters.status`` None takes every finished job (succeeded, failed and stopped).
    """

    database_url: str
    filters: JobFilters = field(default_factory=default_filters)
    role: str | None = None
    gpu_memory_mib: float = DEFAULT_GPU_MEMORY_MIB
    # Only jobs vouched for (``JobRow.vouched_at``: registered by a caller that may write
    # every namespace, or reached by a job master), never a namespace's own writes.
    vouched_only: bool = False

    @property
    def name(self) -> str:
        url = make_url(self.database_url).render_as_string(hide_password=True)
        given = {
            "user": self.filters.user,
            "status": JobStatus(self.filters.status).value if self.filters.status else "finished",
            "name": self.filters.name,
            "dataset": self.filters.dataset,
            "group": self.filters.group_key,
            "role": self.role,
        }
        described = ", ".join(f"{k}={v}" for k, v in given.items() if v is not None)
        return f"database {url} ({described})"

    def load(self) -> pd.DataFrame:
        try:
            engine = make_engine(self.database_url)
        except (SQLAlchemyError, ImportError, ValueError) as exc:
            raise TraceError(f"cannot open the database: {exc}") from exc
        try:
            with Session(engine) as session:
                return self.read(session)
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
            raise TraceError(f"cannot read the database: {reason}") from exc
        finally:
            engine.dispose()

    def read(self, session: Session) -> pd.DataFrame:
        """The normalized run table from an open session."""
        if self.filters.status is not None and not JobStatus(self.filters.status).finished:
            raise TraceError(
                f"only finished jobs are runs; status {self.filters.status} is not finished"
            )
        jobs = _frame(session, self._jobs_query())
        if jobs.empty:
            raise self._nothing_found(session)
        # One workload per group and namespace: another namespace's runs under the same
        # group key are not this workload's history.
        named = jobs["namespace"].notna()
        qualified = jobs["namespace"].astype(str) + ":" + jobs["group_key"].astype(str)
        jobs["group_key"] = qualified.where(named, jobs["group_key"])
        ids = self._jobs_query().with_only_columns(JobRow.id).scalar_subquery()
        roles = _frame(
            session,
            select(RoleSummaryRow.job_id, RoleSummaryRow.role, *_labelled(ROLE_COLUMNS)).where(
                RoleSummaryRow.job_id.in_(ids)
            ),
        )
        peaks = _frame(
            session,
            select(
                NodeSummaryRow.job_id,
                NodeSummaryRow.role,
                *(func.max(column).label(name) for name, column in NODE_PEAKS.items()),
            )
            .where(NodeSummaryRow.job_id.in_(ids))
            .group_by(NodeSummaryRow.job_id, NodeSummaryRow.role),
        )
        return self._table(jobs, roles, peaks)

    def _table(self, jobs: pd.DataFrame, roles: pd.DataFrame, peaks: pd.DataFrame) -> pd.DataFrame:
        """The run table from the three query results (one row per job, per job role and
        per job role again with the per-node peaks)."""
        jobs = jobs.assign(
            start=pd.to_datetime(jobs["started_at"].fillna(jobs["created_at"]), utc=True)
        )
        jobs = jobs.sort_values(["start", "job_id"], kind="stable")
        jobs["seq"] = np.arange(len(jobs))
        rows = jobs.merge(roles, on="job_id").merge(peaks, on=["job_id", "role"], how="left")
        rows = rows[rows["role"] == self.role] if self.role else _main_role_rows(rows)
        if rows.empty:
            which = f"role {self.role!r}" if self.role else "any role"
            raise TraceError(f"no summarized job of the selection has {which}")
        table = pd.DataFrame(
            {
                "workload": rows["group_key"].astype(str),
                "start": rows["start"],
                "seq": rows["seq"],
                "duration_h": rows["run_seconds"].astype(float) / 3600.0,
            }
        )
        for column in ("req_cpu", "req_memory_mib"):
            table[column] = _given(rows[column])
        for column in ("cpu_mean", "cpu_p95", "cpu_max", "mem_mean", "mem_max", "gpu_util_mean"):
            table[column] = rows[column].astype(float)
        gpu_mem = rows["gpu_mem_mib_max"].astype(float)
        requested = _given(rows["gpu_request"])
        on_gpu = requested.notna() | gpu_mem.notna()
        table["gpu_mem_mib_max"] = gpu_mem
        table["req_gpu"] = requested.fillna(1.0).where(on_gpu)
        # A pod reports the memory of all its cards; the trace speaks of one card.
        cards = table["req_gpu"].map(gpu_cards, na_action="ignore")
        card = (rows["card_mib"].astype(float) / cards).fillna(self.gpu_memory_mib)
        table["gpu_mem_total_mib"] = card.where(on_gpu)
        table["req_gpu_memory_mib"] = table["req_gpu"] * table["gpu_mem_total_mib"]
        return check_normalized(table)

    def _jobs_query(self) -> Select:
        query = (
            select(
                JobRow.id.label("job_id"),
                JobRow.namespace,
                JobRow.group_key,
                JobRow.created_at,
                JobSummaryRow.started_at,
                JobSummaryRow.run_seconds,
            )
            .join(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
            .where(JobSummaryRow.final.is_(True))
        )
        if self.vouched_only:
            query = query.where(JobRow.vouched_at.is_not(None))
        return query.where(*_conditions(self.filters))

    def _nothing_found(self, session: Session) -> TraceError:
        finished = [s.value for s in JobStatus if s.finished]
        waiting = session.scalar(
            select(func.count())
            .select_from(JobRow)
            .outerjoin(JobSummaryRow, JobSummaryRow.job_id == JobRow.id)
            .where(JobRow.status.in_(finished), *_conditions(self.filters))
            .where((JobSummaryRow.job_id.is_(None)) | JobSummaryRow.final.is_(False))
        )
        hint = f"; {waiting} of them have no summary yet: run `brain summarize`" if waiting else ""
        return TraceError(f"no summarized finished job in {self.name}{hint}")


def _conditions(filters: JobFilters) -> list:
    conditions = []
    if filters.user is not None:
        conditions.append(JobRow.user == filters.user)
    if filters.status is not None:
        conditions.append(JobRow.status == JobStatus(filters.status).value)
    if filters.name is not None:
        conditions.append(JobRow.name == filters.name)
    if filters.dataset is not None:
        conditions.append(JobRow.dataset == filters.dataset)
    if filters.group_key is not None:
        conditions.append(JobRow.group_key == filters.group_key)
    return conditions


def _main_role_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of each workload's main role (see the module docstring)."""
    weights = rows.groupby(["group_key", "role"], as_index=False)[list(ROLE_WEIGHTS)].sum()
    weights = weights.sort_values(
        ["group_key", *ROLE_WEIGHTS, "role"],
        ascending=[True, *(False for _ in ROLE_WEIGHTS), True],
        kind="stable",
    )
    main = weights.drop_duplicates("group_key")[["group_key", "role"]]
    chosen = rows.merge(main, on=["group_key", "role"])
    runs = rows["job_id"].nunique()
    left_out = runs - chosen["job_id"].nunique()
    if left_out:
        log.warning("%d of %d runs left out: they lack their workload's main role", left_out, runs)
    return chosen


def _given(values: pd.Series) -> pd.Series:
    """A request; 0 (or none) is not given."""
    numbers = values.astype(float)
    return numbers.where(numbers > 0)


def _labelled(columns: dict) -> list:
    return [column.label(name) for name, column in columns.items()]


def _frame(session: Session, query: Select) -> pd.DataFrame:
    result = session.execute(query)
    return pd.DataFrame(result.all(), columns=list(result.keys()))
