"""Each summarized run's hours per UTC day, so that the console's windows and ISO weeks
sum stored rows instead of computing every run's share inside the window per request.

Written with each job summary from now on (``brain.summaries.usage_days``); the
existing summaries are split here, by the same rule, written out so that this revision
keeps doing what it did when the code moves on: a run's hours spread evenly over its run
time, one row per UTC day it touched (the day it ended included, holding the job, its
status and its events), none for a run longer than 3,650 days.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 16:00:00.000000
"""

from collections.abc import Sequence
from datetime import datetime, timedelta

import sqlalchemy as sa
from alembic import op

import brain.db.types

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HOURS = (
    "requested_core_hours",
    "used_core_hours",
    "requested_gib_hours",
    "used_gib_hours",
    "requested_gpu_hours",
    "used_gpu_hours",
)
STATUSES = ("running", "succeeded", "failed", "stopped")
DAY = timedelta(days=1)
LONGEST_S = 3650 * 86400.0
BATCH = 1000


def _time(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, brain.db.types.UTCDateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    columns = [
        sa.Column("job_id", sa.Integer(), nullable=False),
        _time("day"),
        sa.Column("namespace", sa.String(length=253), nullable=True),
        sa.Column("user_name", sa.String(length=128), nullable=False),
        sa.Column("group_key", sa.String(length=400), nullable=False),
        sa.Column("dataset", sa.String(length=253), nullable=True),
        sa.Column("gpu_type", sa.String(length=128), nullable=True),
        _time("ended_at"),
        _time("end_week"),
        sa.Column("believable_seconds", sa.Double(), nullable=False),
        _time("from_at"),
        _time("to_at"),
        sa.Column("run_seconds", sa.Double(), nullable=False),
        *(sa.Column(name, sa.Double(), nullable=False) for name in HOURS),
        sa.Column("jobs", sa.Integer(), nullable=False),
        *(sa.Column(name, sa.Integer(), nullable=False) for name in STATUSES),
        sa.Column("oom_count", sa.Integer(), nullable=False),
        sa.Column("failure_count", sa.Integer(), nullable=False),
    ]
    days = op.create_table(
        "job_usage_days",
        *columns,
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["job_summaries.job_id"],
            name=op.f("fk_job_usage_days_job_id_job_summaries"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "day", name=op.f("pk_job_usage_days")),
    )
    for indexed in (
        ["ended_at"],
        ["namespace", "ended_at"],
        ["user_name", "ended_at"],
        ["group_key", "ended_at"],
        ["day"],
    ):
        name = op.f(f"ix_job_usage_days_{'_'.join(indexed)}")
        op.create_index(name, "job_usage_days", indexed, unique=False)
    _backfill(op.get_bind(), days)


def _backfill(conn: sa.Connection, days: sa.Table) -> None:
    summaries = sa.table(
        "job_summaries",
        sa.column("job_id", sa.Integer()),
        sa.column("namespace", sa.String()),
        sa.column("user_name", sa.String()),
        sa.column("group_key", sa.String()),
        sa.column("dataset", sa.String()),
        sa.column("gpu_type", sa.String()),
        sa.column("status", sa.String()),
        sa.column("ended_at", brain.db.types.UTCDateTime(timezone=True)),
        sa.column("run_seconds", sa.Double()),
        sa.column("series_bucket_seconds", sa.Double()),
        sa.column("series_buckets", sa.Integer()),
        sa.column("oom_count", sa.Integer()),
        sa.column("failure_count", sa.Integer()),
        *(sa.column(name, sa.Double()) for name in HOURS),
    )
    rows: list[dict] = []
    for summary in conn.execute(sa.select(summaries).order_by(summaries.c.job_id)).mappings():
        rows += _day_rows(summary)
        if len(rows) >= BATCH:
            conn.execute(days.insert(), rows)
            rows = []
    if rows:
        conn.execute(days.insert(), rows)


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _day_rows(summary) -> list[dict]:
    end = summary["ended_at"]
    run_s = summary["run_seconds"]
    span = (summary["series_bucket_seconds"] or 0.0) * (summary["series_buckets"] or 0)
    believable = max(run_s, span)
    if believable > LONGEST_S:
        return []
    start = end - timedelta(seconds=run_s)
    keys = {
        "job_id": summary["job_id"],
        **{k: summary[k] for k in ("namespace", "user_name", "group_key", "dataset", "gpu_type")},
        "ended_at": end,
        "end_week": _midnight(end) - timedelta(days=end.weekday()),
        "believable_seconds": believable,
    }
    rows = []
    last = _midnight(end)
    day = _midnight(start)
    while day <= last:
        part_from, part_to = max(start, day), min(end, day + DAY)
        seconds = (part_to - part_from).total_seconds()
        whole = part_from == start and part_to == end
        ends = 1 if day == last else 0
        rows.append(
            {
                **keys,
                **{
                    name: summary[name] if whole else summary[name] * (seconds / run_s)
                    for name in HOURS
                },
                "day": day,
                "from_at": part_from,
                "to_at": part_to,
                "run_seconds": seconds,
                "jobs": ends,
                **{s: ends if summary["status"] == s else 0 for s in STATUSES},
                "oom_count": summary["oom_count"] if ends else 0,
                "failure_count": summary["failure_count"] if ends else 0,
            }
        )
        day += DAY
    return rows


def downgrade() -> None:
    op.drop_table("job_usage_days")
