"""Job and node events."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Body, Query, Request

from api.csv_text import ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, SessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.job_ref import JobRefDep, job_responses
from api.params import name_filter
from api.routing import InputRoute
from api.schemas.events import EventIn, EventOut, EventsIngestOut
from api.state import server_state
from brain.domain import EventKind, utcnow
from brain.services import events, jobs
from brain.services.clock import reject_future
from brain.summaries.store import summarize_job_ids

router = APIRouter(
    prefix="/api/v1/jobs/{uid}/events",
    tags=["events"],
    responses=job_responses(ERROR_RESPONSES),
    route_class=InputRoute,
)


@router.post("", response_model=EventsIngestOut, summary="Record events")
def post_events(
    job_ref: JobRefDep,
    session: SessionDep,
    items: Annotated[list[EventIn], Body(max_length=10_000)],
    settings: SettingsDep,
    request: Request,
    background: BackgroundTasks,
) -> EventsIngestOut:
    """Each event is stored once: (kind, ts, node) identifies it, so retries are safe.
    An `oom` or `failed` event of a finished job is counted in its summary again."""
    reject_future([(f"{i}.ts", e.ts) for i, e in enumerate(items)], utcnow(), settings.clock_skew_s)
    job = jobs.get_job(session, job_ref)
    result = events.record_events(
        session,
        job,
        [events.EventInput(ts=e.ts, kind=e.kind, node=e.node, detail=e.detail) for e in items],
    )
    if result.summary_stale:
        # The summary counts OOMs and failures: summarized again after the response, in
        # its own transaction, as when the job finished.
        factory = server_state(request.app).session_factory
        background.add_task(summarize_job_ids, factory, [job.id])
    return EventsIngestOut(accepted=result.accepted, duplicates=result.duplicates)


@router.get(
    "",
    response_model=list[EventOut],
    summary="List events, oldest first",
    responses=csv_responses(),
)
def list_events(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    kind: EventKind | None = None,
    node: Annotated[str | None, name_filter("Only events of this node.")] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    format: Annotated[ListFormat | None, format_query("one event a row")] = None,
):
    job = jobs.get_job(session, job_ref)
    items = [
        EventOut(id=e.id, ts=e.ts, kind=e.kind, node=e.node_name or None, detail=e.detail)
        for e in events.list_events(session, job, kind=kind, node=node, limit=limit)
    ]
    return csv_of(EventOut, items) if format == ListFormat.csv else items
