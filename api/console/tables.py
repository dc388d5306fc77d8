"""The console's tables as CSV (``?format=csv``, ``&table=`` for a page's other tables):
the numbers behind each table in full precision, units in the column names (cores,
MiB, core-hours, fractions 0..1, dollars), times in RFC 3339 UTC."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from fastapi.responses import PlainTextResponse, Response

from api.console.advice import RoleAdvice, RunAdvice
from api.csv_text import CSV_MEDIA_TYPE, csv_text
from api.schemas.portraits import CostOut, ResourceHours, RoleOut, WastefulJob
from api.schemas.suggestions import SuggestionOut
from brain.costs import Prices
from brain.portraits.job_table import JobTableRow
from brain.portraits.trend import Week
from brain.summaries.hours import Hours

CSV = "csv"
FORMATS = ("html", CSV)


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[Any]]


def of_dicts(columns: list[str], rows: list[dict[str, Any]]) -> Table:
    return Table(columns, [[row.get(c) for c in columns] for row in rows])


def hours_columns(hours: ResourceHours) -> dict[str, Any]:
    """``cpu_requested_core_hours`` … ``gpu_efficiency``, ``efficiency_score``."""
    flat: dict[str, Any] = {}
    for resource in ("cpu", "memory", "gpu"):
        for field, value in getattr(hours, resource).model_dump().items():
            flat[f"{resource}_{field}"] = value
    flat["efficiency_score"] = hours.efficiency_score
    return flat


HOURS_COLUMNS = list(hours_columns(ResourceHours.of(Hours(0, 0, 0, 0, 0, 0))))
COST_COLUMNS = ["requested_usd", "used_usd", "waste_usd"]


def cost_columns(cost: CostOut | None) -> dict[str, Any]:
    return {} if cost is None else cost.model_dump()


def hours_table(hours: ResourceHours, cost: CostOut | None) -> Table:
    """One row: a job's or a window's resource-hours (and dollars where priced)."""
    columns = HOURS_COLUMNS + (COST_COLUMNS if cost is not None else [])
    return of_dicts(columns, [{**hours_columns(hours), **cost_columns(cost)}])


def jobs_table(rows: list[JobTableRow], prices: Prices | None) -> Table:
    columns = ["uid", "name", "user", "namespace", "dataset", "gpu_type", "status"]
    columns += ["started_at", "created_at", *HOURS_COLUMNS]
    if prices is not None:
        columns += COST_COLUMNS
    out = []
    for row in rows:
        fields = {c: getattr(row, c) for c in columns[:9]}
        if row.hours is not None:
            fields |= hours_columns(ResourceHours.of(row.hours))
            if prices is not None:
                fields |= CostOut.model_validate(prices.of(row.hours, row.gpu_type)).model_dump()
        out.append(fields)
    return of_dicts(columns, out)


ROLE_COLUMNS = [
    "role",
    "node_count",
    "cpu_request_cores",
    "cpu_used_mean_cores",
    "cpu_used_p95_cores",
    "cpu_used_max_cores",
    "memory_request_mib",
    "memory_used_mean_mib",
    "memory_used_p95_mib",
    "memory_used_max_mib",
    "gpu_request",
    "gpu_util_mean",
    "oom_count",
]


def roles_table(roles: list[RoleOut]) -> Table:
    rows = []
    for r in roles:
        cpu, memory = r.used.cpu_cores, r.used.memory_mib
        values = [r.role, r.node_count, r.cpu_request_cores, cpu.mean, cpu.p95, cpu.max]
        values += [r.memory_request_mib, memory.mean, memory.p95, memory.max]
        values += [r.gpu_request, r.used.gpu_util.mean, r.oom_count]
        rows.append(values)
    return Table(ROLE_COLUMNS, rows)


def events_table(events) -> Table:
    rows = [[e.ts, str(e.kind), e.node_name, e.detail] for e in events]
    return Table(["ts", "kind", "node", "detail"], rows)


# Per run, then RoleAdvice's fields (units in their names): the same header with no row.
ADVICE_COLUMNS = ["uid", "name", "confidence", *(f.name for f in fields(RoleAdvice))]


def advice_table(advice: list[RunAdvice]) -> Table:
    """One row per advised run and role."""
    rows = [
        {"uid": run.uid, "name": run.name, "confidence": run.confidence, **asdict(role)}
        for run in advice
        for role in run.roles
    ]
    return of_dicts(ADVICE_COLUMNS, rows)


def wasteful_table(jobs: list[WastefulJob]) -> Table:
    priced = any(j.cost is not None for j in jobs)
    columns = ["uid", "name", "user", "dataset", "gpu_type", "status", "ended_at", "oom_count"]
    columns += HOURS_COLUMNS + (COST_COLUMNS if priced else [])
    rows = [
        {**j.model_dump(include=set(columns)), **hours_columns(j.hours), **cost_columns(j.cost)}
        for j in jobs
    ]
    return of_dicts(columns, rows)


def trend_table(weeks: list[Week]) -> Table:
    """One row per ISO week (its Monday 00:00 UTC and its name, 2026-W47)."""
    priced = any(w.cost is not None for w in weeks)
    columns = ["week_start", "iso_week", "jobs", *HOURS_COLUMNS, "oom_count"]
    columns += COST_COLUMNS if priced else []
    rows = [
        {
            "week_start": w.start,
            "iso_week": w.iso_week,
            "jobs": w.jobs,
            "oom_count": w.hours.oom_count,
            **hours_columns(ResourceHours.of(w.hours)),
            **(CostOut.model_validate(w.cost).model_dump() if w.cost is not None else {}),
        }
        for w in weeks
    ]
    return of_dicts(columns, rows)


def wasters_table(top) -> Table:
    priced = any(row.totals.cost is not None for row in top)
    columns = ["user", "jobs", *HOURS_COLUMNS] + (COST_COLUMNS if priced else [])
    rows = [
        {
            "user": row.key,
            "jobs": row.totals.jobs,
            **hours_columns(row.totals.hours),
            **cost_columns(row.totals.cost),
        }
        for row in top
    ]
    return of_dicts(columns, rows)


SUGGESTION_COLUMNS = [
    "role",
    "count",
    "cpu_request_cores",
    "cpu_limit_cores",
    "memory_mib",
    "oom_risk",
    "gpu",
]


def suggestion_table(suggestion: SuggestionOut | None) -> Table:
    roles = suggestion.roles if suggestion is not None else []
    rows = [
        [r.role, r.count, r.cpu_request, r.cpu_limit, r.memory_mib, r.oom_risk, r.gpu]
        for r in roles
    ]
    return Table(SUGGESTION_COLUMNS, rows)


def csv_link(request, table: str) -> str:
    """This page's address (its filters kept) for ``table`` as CSV."""
    url = request.url.include_query_params(format=CSV, table=table)
    return f"{url.path}?{url.query}"


def wrong_format(format: str | None) -> Response | None:
    """The 400 for a format the console does not serve, else None."""
    if format is None or format in FORMATS:
        return None
    return PlainTextResponse(f"format: {format!r} is not one of {', '.join(FORMATS)}\n", 400)


def csv_response(tables: dict[str, Table], table: str | None, stem: str) -> Response:
    """``table`` of the page (None: its first) as a CSV download; a 400 naming the
    field for a table the page does not have."""
    name = table or next(iter(tables))
    if name not in tables:
        return PlainTextResponse(
            f"table: {name!r} is not a table of this page; one of {', '.join(tables)}\n", 400
        )
    body = csv_text(tables[name].columns, tables[name].rows)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{stem}-{name}")
    return Response(
        body,
        media_type=CSV_MEDIA_TYPE,
        headers={"Content-Disposition": f'attachment; filename="{safe}.csv"'},
    )
