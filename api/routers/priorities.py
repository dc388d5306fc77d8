"""Priority from utilization, for schedulers: who should wait when the cluster is full."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from api.auth import namespace_asked
from api.csv_text import NEXT_OFFSET, ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.routers.portraits import NamespaceQuery
from api.routing import InputRoute
from api.schemas.portraits import Page, TotalsOut
from api.schemas.priorities import PrioritiesOut, PriorityBy, PriorityOut, PriorityRow
from brain.domain import utcnow
from brain.history.plausible import SECONDS_PER_DAY
from brain.portraits import priorities as priorities_
from brain.portraits.priorities import PriorityClass

router = APIRouter(
    prefix="/api/v1/priorities",
    tags=["portraits"],
    responses=ERROR_RESPONSES,
    route_class=InputRoute,
)


@router.get(
    "",
    response_model=PrioritiesOut,
    summary="Priority classes from utilization",
    dependencies=[Depends(namespace_asked)],
    responses=csv_responses(),
)
def priorities(
    session: ReadSessionDep,
    settings: SettingsDep,
    by: Annotated[PriorityBy, Query(description="Score users or groups.")] = PriorityBy.user,
    days: Annotated[
        int, Query(ge=1, le=3650, description="Window: jobs that ended in the last N days.")
    ] = 30,
    priority_class: Annotated[
        PriorityClass | None, Query(description="Only owners given this class.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size.")] = 100,
    offset: Annotated[
        int, Query(ge=0, le=1_000_000, description="Items to skip: `next_offset` of the last page.")
    ] = 0,
    namespace: NamespaceQuery = None,
    format: Annotated[
        ListFormat | None,
        format_query("one owner a row, its priority and totals as columns", NEXT_OFFSET),
    ] = None,
):
    """A score per user or group from their portraits over the window (efficiency of
    CPU, memory and GPU resource-hours, less a penalty for OOM kills) and the priority
    class it suggests, so a scheduler can lower the priority of chronic over-askers.
    Thresholds: BRAIN_PRIORITY_LOW_BELOW, BRAIN_PRIORITY_HIGH_FROM,
    BRAIN_PRIORITY_OOM_WEIGHT, BRAIN_PRIORITY_MIN_JOBS. An owner is one per namespace (the
    same user name in two namespaces is scored twice, apart); runs longer than
    BRAIN_HISTORY_MAX_RUN_DAYS are left out, and a run that started before the window
    counts its share inside it."""
    since = utcnow() - timedelta(days=days)
    max_run_s = settings.history_max_run_days * SECONDS_PER_DAY
    rows = priorities_.priorities(session, by.value, since, settings.priority, max_run_s)
    if priority_class is not None:
        rows = [row for row in rows if row[3].priority_class == priority_class]
    if namespace is not None:
        rows = [row for row in rows if row[0] == namespace]
    page = rows[offset : offset + limit]
    items = [
        PriorityRow(
            namespace=namespace,
            key=key,
            priority=PriorityOut.model_validate(p),
            totals=TotalsOut.of(t),
        )
        for namespace, key, t, p in page
    ]
    next_offset = Page.next_of(offset, limit, len(rows))
    if format == ListFormat.csv:
        return csv_of(PriorityRow, items, next_offset)
    return PrioritiesOut(
        by=by,
        days=days,
        since=since,
        items=items,
        total=len(rows),
        limit=limit,
        offset=offset,
        next_offset=next_offset,
    )
