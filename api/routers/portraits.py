"""Portraits for dashboards: how a job behaved, who wastes what."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from api.auth import namespace_asked
from api.csv_text import NEXT_OFFSET, ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.job_ref import JobRefDep, job_responses
from api.params import Offset
from api.responses import model_json
from api.routing import InputRoute
from api.schemas.common import NO_NUL
from api.schemas.portraits import (
    JobPortraitOut,
    NodePage,
    NodeSummaryOut,
    OwnerPortraitOut,
    Page,
    PriorityOut,
    RankingBy,
    RankingOut,
    RankingRow,
    TotalsOut,
    WastefulJob,
    WastefulPage,
    WasteSort,
)
from brain.config import Settings
from brain.costs import Cost, Prices
from brain.db.engine import ReadSession
from brain.domain import K8S_LABEL, NAMESPACE_MAX, utcnow
from brain.history.plausible import SECONDS_PER_DAY
from brain.portraits import jobs as portraits
from brain.portraits.priorities import priority_of
from brain.portraits.spend import spend_by
from brain.services import jobs
from brain.summaries.series import STORED_BUCKETS

router = APIRouter(
    prefix="/api/v1/portraits",
    tags=["portraits"],
    responses=ERROR_RESPONSES,
    route_class=InputRoute,
)

NamespaceQuery = Annotated[
    str | None,
    Query(
        max_length=NAMESPACE_MAX,
        pattern=K8S_LABEL,
        description="Only this namespace's jobs (a user or group is one per namespace); a "
        "token limited to namespaces must name one of them.",
    ),
]
DaysQuery = Annotated[
    int, Query(ge=1, le=3650, description="Window: jobs that ended in the last N days.")
]
SortQuery = Annotated[
    WasteSort,
    Query(
        description="Resource whose waste (requested − used resource-hours) ranks first; "
        "ties go to the others in the order GPU, CPU, memory."
    ),
]


@router.get(
    "",
    response_model=RankingOut,
    summary="Rank users, datasets, groups or GPU types",
    dependencies=[Depends(namespace_asked)],
    responses=csv_responses(),
)
def ranking(
    session: ReadSessionDep,
    settings: SettingsDep,
    by: Annotated[RankingBy, Query(description="What to rank.")] = RankingBy.user,
    days: DaysQuery = 30,
    sort: SortQuery = WasteSort.gpu,
    top: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 20,
    offset: Offset = 0,
    namespace: NamespaceQuery = None,
    format: Annotated[
        ListFormat | None, format_query("one key a row, its totals as columns", NEXT_OFFSET)
    ] = None,
):
    """The dashboard's first view: each key with its jobs, success rate, requested and
    used resource-hours, waste, efficiency and OOMs over the window, most waste first.
    With `namespace`, only that namespace's jobs (a token limited to namespaces must
    name one of them)."""
    since = utcnow() - timedelta(days=days)
    rows, total = portraits.ranking(
        session, by.value, since, sort.value, top, offset, _max_run_s(settings), namespace
    )
    keys = [key for key, _ in rows]
    spent = spend_of(
        session, settings.prices, by.value, keys, since, _max_run_s(settings), namespace
    )
    items = [RankingRow(key=key, totals=TotalsOut.of(t, spent.get(key))) for key, t in rows]
    next_offset = Page.next_of(offset, top, total)
    if format == ListFormat.csv:
        return csv_of(RankingRow, items, next_offset)
    return RankingOut(
        by=by,
        sort=sort,
        days=days,
        since=since,
        items=items,
        total=total,
        limit=top,
        offset=offset,
        next_offset=next_offset,
    )


@router.get(
    "/jobs/{uid}",
    response_model=JobPortraitOut,
    summary="A job's portrait",
    responses=job_responses(),
)
def job_portrait(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    settings: SettingsDep,
    points: Annotated[
        int,
        Query(
            ge=1, le=STORED_BUCKETS, description="Most buckets per chart series (time resolution)."
        ),
    ] = 200,
) -> Response:
    """The job's summary (per role: requested vs used, resource-hours, waste, OOMs; the
    job's speed and the plans applied with the speed before and after) and its usage
    and speed series bucketed for charts. Read from the stored summary; a job without a
    final one (running) is computed from its raw samples on the fly. `excluded_reason`
    says why aggregates leave the run out, if they do."""
    portrait = portraits.job_portrait_of(session, job_ref, points)
    return model_json(JobPortraitOut.of(portrait, settings.prices, _max_run_s(settings)))


@router.get(
    "/jobs/{uid}/nodes",
    response_model=NodePage,
    summary="A job's nodes, summarized",
    responses={**job_responses(), **csv_responses()},
)
def job_nodes(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Page size.")] = 100,
    offset: Offset = 0,
    format: Annotated[ListFormat | None, format_query("one node a row", NEXT_OFFSET)] = None,
):
    """Per node: request, usage statistics, run and sampled time, resource-hours; by role
    and name."""
    job = jobs.get_job(session, job_ref)
    nodes, total = portraits.node_page(session, job, limit, offset)
    items = [NodeSummaryOut.of(n) for n in nodes]
    next_offset = Page.next_of(offset, limit, total)
    if format == ListFormat.csv:
        return csv_of(NodeSummaryOut, items, next_offset)
    return NodePage(items=items, total=total, limit=limit, offset=offset, next_offset=next_offset)


@router.get(
    "/users/{user}",
    response_model=OwnerPortraitOut,
    summary="A user's portrait",
    dependencies=[Depends(namespace_asked)],
)
def user_portrait(
    user: Annotated[str, Path(min_length=1, max_length=128, pattern=NO_NUL)],
    session: ReadSessionDep,
    settings: SettingsDep,
    days: DaysQuery = 30,
    sort: SortQuery = WasteSort.gpu,
    top: Annotated[
        int, Query(ge=1, le=500, description="Page size of the most wasteful jobs.")
    ] = 10,
    offset: Offset = 0,
    namespace: NamespaceQuery = None,
) -> OwnerPortraitOut:
    """Totals over the user's jobs that ended in the window, and their most wasteful jobs.
    A user without jobs gets zeros, not 404. With `namespace`, only that namespace's
    jobs: a user is one per namespace (a token limited to namespaces must name one)."""
    return owner_portrait_out(session, settings, "user", user, days, sort, top, offset, namespace)


@router.get(
    "/groups/{group:path}",
    response_model=OwnerPortraitOut,
    summary="A group's portrait",
    dependencies=[Depends(namespace_asked)],
)
def group_portrait(
    group: Annotated[str, Path(min_length=1, max_length=400, pattern=NO_NUL)],
    session: ReadSessionDep,
    settings: SettingsDep,
    days: DaysQuery = 30,
    sort: SortQuery = WasteSort.gpu,
    top: Annotated[
        int, Query(ge=1, le=500, description="Page size of the most wasteful jobs.")
    ] = 10,
    offset: Offset = 0,
    namespace: NamespaceQuery = None,
) -> OwnerPortraitOut:
    """As the user portrait, over the runs of a group key (which may contain `/`, e.g.
    the default `<user>/<name>`)."""
    return owner_portrait_out(session, settings, "group", group, days, sort, top, offset, namespace)


def _max_run_s(settings) -> float:
    return settings.history_max_run_days * SECONDS_PER_DAY


def owner_portrait_out(
    session: ReadSession,
    settings: Settings,
    owner: str,
    key: str,
    days: int,
    sort: WasteSort,
    top: int,
    offset: int,
    namespace: str | None = None,
) -> OwnerPortraitOut:
    since = utcnow() - timedelta(days=days)
    totals, wasteful = portraits.owner_portrait(
        session, owner, key, since, sort.value, top, offset, _max_run_s(settings), namespace
    )
    prices = settings.prices
    spent = spend_of(session, prices, owner, [key], since, _max_run_s(settings), namespace)
    return OwnerPortraitOut(
        owner=owner,
        key=key,
        days=days,
        since=since,
        totals=TotalsOut.of(totals, spent.get(key)),
        priority=PriorityOut.model_validate(priority_of(totals, settings.priority)),
        wasteful_jobs=WastefulPage(
            items=[WastefulJob.of(j, prices) for j in wasteful],
            total=totals.jobs,
            limit=top,
            offset=offset,
            next_offset=Page.next_of(offset, top, totals.jobs),
        ),
    )


def spend_of(
    session: ReadSession,
    prices: Prices,
    kind: str,
    keys: list[str | None],
    since,
    max_run_s: float,
    namespace: str | None = None,
) -> dict[str | None, Cost]:
    """Dollars per key (of ``namespace``'s jobs only, when given) where anything is priced,
    of the same believed runs and window shares as the hours; nothing (no query) where
    none is."""
    if not prices.configured:
        return {}
    return spend_by(session, kind, keys, since, prices, namespace, max_run_s=max_run_s)
