"""Optimize a job, and read, watch and report on its ScalePlans."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Literal

import yaml
from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api.auth import CurrentPrincipal
from api.csv_text import ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, RegistryDep, SessionDep, SettingsDep, SizingModelDep
from api.dlrover.ps_hosts import ps_hosts_of
from api.dlrover.scaleplan import scaleplan
from api.errors import ERROR_RESPONSES
from api.job_ref import JobRefDep, job_responses
from api.paging import within_page_bytes
from api.params import PlanId
from api.plan_watch import PlanWatch
from api.routing import InputRoute
from api.schemas.plans import OptimizeRequest, OptimizerOut, PlanOut, PlanStatusIn
from api.state import server_state
from brain.bounds import INT32_MAX
from brain.domain import utcnow
from brain.job_ref import JobRef
from brain.services import jobs, plans
from brain.services.clock import reject_future

router = APIRouter(tags=["plans"], responses=ERROR_RESPONSES, route_class=InputRoute)
JOB = "/api/v1/jobs/{uid}"


@router.get(
    "/api/v1/optimizers",
    response_model=list[OptimizerOut],
    summary="List optimizers",
    responses=csv_responses(),
)
def list_optimizers(
    registry: RegistryDep,
    format: Annotated[ListFormat | None, format_query("one optimizer a row")] = None,
):
    """Every loaded optimizer: its stages, what it does, and its settings (JSON Schema)."""
    items = [OptimizerOut(**vars(info)) for info in registry.info()]
    return csv_of(OptimizerOut, items) if format == ListFormat.csv else items


@router.post(
    f"{JOB}/optimize",
    response_model=PlanOut,
    summary="Run a stage's optimizers",
    responses=job_responses(
        {
            409: {
                "description": "Stage `oom` for a node with no OOM recorded "
                "(`conflict`, `field: node`): report the OOM event first; nothing is stored."
            }
        }
    ),
)
def optimize(
    job_ref: JobRefDep,
    body: OptimizeRequest,
    session: SessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    principal: CurrentPrincipal,
) -> PlanOut:
    """Returns the stored plan. Nothing to change gives an empty plan with its reasons.
    An OOM event already answered returns the plan that answered it; stage `oom` for a
    node without a recorded OOM event is a 409 and stores no plan."""
    job = jobs.get_job(session, job_ref)
    plan = plans.optimize(
        session,
        job,
        registry,
        settings,
        body.stage,
        optimizer_names=body.optimizers,
        overrides=body.settings,
        node=body.node,
        sizing_model=sizing_model,
        readable=principal.namespaces,
        ps_hosts=ps_hosts_of,
    ).plan
    return PlanOut.of(plan, job.uid)


@router.get(
    f"{JOB}/plans",
    response_model=list[PlanOut],
    summary="List plans, newest first",
    responses={**job_responses(), **csv_responses()},
)
def list_plans(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    before: Annotated[
        int | None, Query(ge=1, le=INT32_MAX, description="Only plans with a smaller id (paging).")
    ] = None,
    format: Annotated[
        ListFormat | None, format_query("one plan a row (its roles and nodes as JSON cells)")
    ] = None,
):
    """Up to `limit` plans, fewer when more would make the answer over 1 MiB: page on
    with `before` set to the last id received."""
    job = jobs.get_job(session, job_ref)
    page = plans.list_plans(session, job, limit, before)
    items = within_page_bytes([PlanOut.of(p, job.uid) for p in page])
    return csv_of(PlanOut, items) if format == ListFormat.csv else items


@router.get(
    f"{JOB}/plans/latest",
    response_model=PlanOut,
    summary="Long-poll for a plan newer than `after`",
    responses=job_responses({204: {"description": "No newer plan within `wait` seconds."}}),
)
async def latest_plan(
    job_ref: JobRefDep,
    request: Request,
    after: Annotated[
        int, Query(ge=0, le=INT32_MAX, description="The id of the last plan the caller has.")
    ] = 0,
    wait: Annotated[float, Query(ge=0, le=60, description="Seconds to wait for a newer plan.")] = 0,
):
    """Training agents call this in a loop with the last id they saw: the oldest plan
    after it that was neither superseded nor a no-change answer, so every change to
    apply (an OOM fix included) is seen in order."""
    deadline = time.monotonic() + wait
    factory = server_state(request.app).session_factory
    watch: PlanWatch = server_state(request.app).plan_watch
    with watch.watching(job_ref.uid) as new_plan_seen:
        while True:
            new_plan_seen.clear()
            found = await run_in_threadpool(_newest_after, factory, job_ref, after)
            if found is not None:
                return found
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Response(status_code=204)
            try:
                await asyncio.wait_for(new_plan_seen.wait(), remaining)
            except TimeoutError:
                return Response(status_code=204)


def _newest_after(factory, job_ref: JobRef, after: int) -> PlanOut | None:
    with factory() as session:
        job = jobs.get_job(session, job_ref)
        plan = plans.next_plan_after(session, job.id, after)
        return None if plan is None else PlanOut.of(plan, job.uid)


@router.get(
    f"{JOB}/plans/{{plan_id}}",
    response_model=PlanOut,
    summary="Read a plan (JSON, or the DLRover ScalePlan object with format=k8s)",
    responses=job_responses(
        {
            200: {"content": {"application/yaml": {}}},
            409: {
                "description": "format=k8s for a job whose name or namespace Kubernetes would "
                "refuse (`conflict`, `field: format`)."
            },
        }
    ),
)
def get_plan(
    job_ref: JobRefDep,
    plan_id: PlanId,
    session: ReadSessionDep,
    format: Annotated[Literal["json", "k8s"], Query(description="`k8s`: ScalePlan YAML.")] = "json",
):
    job = jobs.get_job(session, job_ref)
    plan = plans.get_plan(session, job, plan_id)
    if format == "json":
        return PlanOut.of(plan, job.uid)
    manifest = scaleplan(session, job, plan)
    return Response(yaml.safe_dump(manifest, sort_keys=False), media_type="application/yaml")


@router.post(
    f"{JOB}/plans/{{plan_id}}/status",
    response_model=PlanOut,
    summary="Report what became of a plan",
    responses=job_responses({409: {"description": "The plan cannot move to that status."}}),
)
def set_plan_status(
    job_ref: JobRefDep,
    plan_id: PlanId,
    body: PlanStatusIn,
    session: SessionDep,
    settings: SettingsDep,
) -> PlanOut:
    """`applied`, `rejected` or `failed`, with a message; the next optimization sees it.
    An applied plan becomes the job's desired state (role specs, node requests, counts)."""
    reject_future([("applied_at", body.applied_at)], utcnow(), settings.clock_skew_s)
    job = jobs.get_job(session, job_ref)
    plan = plans.set_status(session, job, plan_id, body.status, body.message, body.applied_at)
    return PlanOut.of(plan, job.uid)
