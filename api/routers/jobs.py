"""Register, update, read and list jobs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, BackgroundTasks, Query, Request, Response

from api.auth import CurrentPrincipal
from api.csv_text import CSV_MEDIA_TYPE, ListFormat, csv_text
from api.deps import ReadSessionDep, SessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.job_ref import JobNamespace, JobRefDep, job_responses
from api.paging import within_page_bytes
from api.params import JobUid, name_filter
from api.routing import InputRoute
from api.schemas.jobs import JobDeleted, JobOut, JobPage, JobPatch, JobSpec
from api.state import server_state
from brain.domain import JobStatus, utcnow
from brain.errors import Forbidden, InvalidInput
from brain.services import jobs
from brain.services.clock import reject_future
from brain.services.job_deletion import delete_job as delete_job_rows
from brain.summaries.store import summarize_job_ids

router = APIRouter(
    prefix="/api/v1/jobs", tags=["jobs"], responses=ERROR_RESPONSES, route_class=InputRoute
)


@router.put(
    "/{uid}",
    response_model=JobOut,
    status_code=200,
    responses={201: {"model": JobOut, "description": "Created"}},
    summary="Register or update a job",
)
def put_job(
    uid: JobUid,
    spec: JobSpec,
    response: Response,
    request: Request,
    background: BackgroundTasks,
    session: SessionDep,
    settings: SettingsDep,
    principal: CurrentPrincipal,
    namespace: JobNamespace = None,
) -> JobOut:
    """Idempotent: the same body twice leaves one job. 201 when created, 200 when updated.

    A job is its uid within its namespace (the body's `namespace`): uids are unique per
    namespace, so another namespace holding the same uid neither shows nor matters, and
    a PUT naming another namespace registers another job. A job registered without a
    namespace (e.g. first reported by its DLRover master) takes the namespace of the
    first PUT that names one, when the caller may read jobs without a namespace. A token
    for every namespace vouches for the job it registers: its bare uid then means this
    job even when other namespaces register the uid too."""
    if not principal.sees(spec.namespace):
        raise Forbidden(
            f"token {principal.name!r} may not write jobs in namespace {spec.namespace!r}",
            field="namespace",
        )
    if namespace is not None and (namespace or None) != spec.namespace:
        raise InvalidInput(
            f"?namespace={namespace!r} is not the body's namespace {spec.namespace!r}",
            field="namespace",
        )
    reject_future(
        [
            ("created_at", spec.created_at),
            ("started_at", spec.started_at),
            ("finished_at", spec.finished_at),
        ],
        utcnow(),
        settings.clock_skew_s,
    )
    every_namespace = principal.namespaces is None
    job, created = jobs.upsert_job(session, uid, spec.to_input(), every_namespace=every_namespace)
    _summarize_if_finished(job, request, background)
    response.status_code = 201 if created else 200
    return JobOut.of(job)


@router.get("/{uid}", response_model=JobOut, summary="Read a job", responses=job_responses())
def get_job(job_ref: JobRefDep, session: ReadSessionDep) -> JobOut:
    return JobOut.of(jobs.get_job(session, job_ref))


@router.patch(
    "/{uid}",
    response_model=JobOut,
    summary="Change status, exit reason or times (a finished job is then summarized)",
    responses=job_responses(),
)
def patch_job(
    job_ref: JobRefDep,
    patch: JobPatch,
    request: Request,
    background: BackgroundTasks,
    session: SessionDep,
    settings: SettingsDep,
) -> JobOut:
    reject_future(
        [("started_at", patch.started_at), ("finished_at", patch.finished_at)],
        utcnow(),
        settings.clock_skew_s,
    )
    job = jobs.patch_job(session, job_ref, patch.to_changes())
    _summarize_if_finished(job, request, background)
    return JobOut.of(job)


@router.delete(
    "/{uid}",
    response_model=JobDeleted,
    summary="Delete a job with its nodes, samples, plans, events and summaries",
    responses=job_responses(),
)
def delete_job(job_ref: JobRefDep, session: SessionDep) -> JobDeleted:
    """Needs write scope (or admin) for the job's namespace: a job of a namespace the
    token cannot read answers 404, as one that does not exist, and nothing is deleted.
    Everything goes in one transaction. Deleting is final; a job master that reports
    on the uid again registers a new job."""
    deleted = delete_job_rows(session, job_ref)
    return JobDeleted(uid=deleted.uid, namespace=deleted.namespace, deleted_rows=deleted.rows)


def _summarize_if_finished(job, request: Request, background: BackgroundTasks) -> None:
    """A finished job is summarized after the response, in its own transaction, so a
    slow or failing summary never fails the update (the refresher retries it)."""
    if JobStatus(job.status).finished:
        background.add_task(summarize_job_ids, server_state(request.app).session_factory, [job.id])


# A job's scalar fields, the CSV's columns (roles and limits are nested: read them as JSON).
JOB_CSV_COLUMNS = [
    "uid",
    "name",
    "user",
    "dataset",
    "group_key",
    "namespace",
    "cluster",
    "framework",
    "strategy",
    "gpu_type",
    "kind",
    "discovered",
    "status",
    "exit_reason",
    "total_steps",
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
]


@router.get(
    "",
    response_model=JobPage,
    summary="List jobs, newest first",
    responses={
        200: {
            "content": {"text/csv": {"schema": {"type": "string"}}},
            "description": "JSON, or with `format=csv` the page as CSV (`X-Next-Cursor`: "
            "the next page's cursor).",
        }
    },
)
def list_jobs(
    session: ReadSessionDep,
    principal: CurrentPrincipal,
    user: Annotated[str | None, name_filter("Only this user's jobs.", 128)] = None,
    status: JobStatus | None = None,
    name: Annotated[str | None, name_filter("Only jobs of this name.")] = None,
    dataset: Annotated[str | None, name_filter("Only jobs on this dataset.")] = None,
    group: Annotated[str | None, name_filter("Group key of recurring runs.", 400)] = None,
    limit: Annotated[int, Query(ge=1, le=500, description="Page size.")] = 50,
    cursor: Annotated[
        str | None, Query(max_length=200, description="`next_cursor` of the previous page.")
    ] = None,
    format: Annotated[
        ListFormat | None,
        Query(
            description="`csv`: the page as CSV, a header row and one job a row, its scalar "
            "fields (times in RFC 3339 UTC); the next page's cursor in `X-Next-Cursor`."
        ),
    ] = None,
):
    """A namespace-restricted token lists only its namespaces' jobs. A page holds fewer
    than `limit` jobs when more would make the answer over 1 MiB (`next_cursor` goes on)."""
    filters = jobs.JobFilters(
        user=user,
        status=status,
        name=name,
        dataset=dataset,
        group_key=group,
        namespaces=principal.namespaces,
    )
    page, next_cursor = jobs.list_jobs(session, filters, limit, cursor)
    items = within_page_bytes([JobOut.of(j) for j in page])
    if len(items) < len(page):  # cut at MAX_PAGE_BYTES: the next page starts after it
        last = page[len(items) - 1]
        next_cursor = jobs.encode_cursor(last.created_at, last.id)
    if format == ListFormat.csv:
        rows = [[getattr(j, c) for c in JOB_CSV_COLUMNS] for j in items]
        headers = {"X-Next-Cursor": next_cursor} if next_cursor else None
        body = csv_text(JOB_CSV_COLUMNS, rows)
        return Response(body, media_type=CSV_MEDIA_TYPE, headers=headers)
    return JobPage(items=items, next_cursor=next_cursor)
