"""Nodes and usage time series of a job."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from api.csv_text import ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, SessionDep, SettingsDep, TelemetryDep, after_commit
from api.errors import ERROR_RESPONSES
from api.job_ref import JobRefDep, job_responses
from api.openapi_bounds import setting_mark
from api.params import NodeName, name_filter
from api.routing import InputRoute, OffloadedRoute, StrictJsonRequest
from api.schemas.bounds import bounds_in_force
from api.schemas.common import Instant
from api.schemas.samples import (
    IngestOut,
    NodeIn,
    NodeOut,
    SampleBatch,
    SeriesOut,
    fast_validated_batch,
)
from api.state import server_state
from brain.domain import utcnow
from brain.errors import TooLarge
from brain.services import jobs, nodes, samples
from brain.services.clock import reject_future
from brain.services.silent_nodes import settle_silent_nodes
from brain.telemetry import Telemetry

router = APIRouter(
    prefix="/api/v1/jobs/{uid}",
    tags=["samples"],
    responses=job_responses(ERROR_RESPONSES),
    route_class=InputRoute,
)


class _SampleBatchRequest(StrictJsonRequest):
    """A request whose JSON body is a sample batch, validated the fast way when it passes
    (``fast_validated_batch``). FastAPI then finds a SampleBatch where it expects one and
    keeps it as it is; any other body is parsed and validated as on every other route."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            batch = fast_validated_batch(
                await self.body(), server_state(self.app).settings.input_bounds
            )
            if batch is None:
                return await super().json()
            self._json = batch
        return self._json


class SampleBatchRoute(OffloadedRoute):
    """InputRoute for the batch push: the same bounds in force, the fast way in."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def batch_handler(request: Request) -> Response:
            with bounds_in_force(server_state(request.app).settings.input_bounds):
                return await handler(_SampleBatchRequest(request.scope, request.receive))

        return batch_handler


def post_samples(
    job_ref: JobRefDep,
    batch: SampleBatch,
    session: SessionDep,
    settings: SettingsDep,
    telemetry: TelemetryDep,
) -> IngestOut:
    """Stores each point once: a retried batch reports its points as duplicates."""
    total = len(batch.nodes) + len(batch.speed)
    if total > settings.max_batch_points:
        raise TooLarge(
            f"batch has {total} points; at most {settings.max_batch_points} per request",
            field="nodes",
        )
    now = utcnow()
    reject_future(_latest("nodes", batch.nodes), now, settings.clock_skew_s)
    reject_future(_latest("speed", batch.speed), now, settings.clock_skew_s)
    job = jobs.get_job(session, job_ref)
    result = samples.ingest(session, job, batch.nodes, [p.to_point() for p in batch.speed])
    if batch.nodes:
        settle_silent_nodes(session, job, settings.collector.node_silent_after_s)
    after_commit(session, lambda: _count(telemetry, result))
    return IngestOut(accepted=result.accepted, duplicates=result.duplicates)


router.add_api_route(
    "/samples",
    post_samples,
    methods=["POST"],
    response_model=IngestOut,
    summary="Push a batch of node and speed samples",
    responses={
        413: {
            "description": "More points in one batch than `BRAIN_MAX_BATCH_POINTS` allows.",
            **setting_mark("BRAIN_MAX_BATCH_POINTS"),
        }
    },
    route_class_override=SampleBatchRoute,
)


def _count(telemetry: Telemetry, result: samples.IngestResult) -> None:
    telemetry.ingested_points.labels("api", "stored").inc(result.accepted)
    telemetry.ingested_points.labels("api", "duplicate").inc(result.duplicates)


def _latest(field: str, points: list) -> list[tuple[str, datetime]]:
    """Only the latest point can be too far in the future; name it by its position and
    give its time in UTC (a point that came the fast way keeps its offset)."""
    if not points:
        return []
    position = max(range(len(points)), key=lambda i: points[i].ts)
    return [(f"{field}.{position}.ts", points[position].ts.astimezone(UTC))]


@router.get("/samples", response_model=SeriesOut, summary="Read the time series back")
def get_samples(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    node: Annotated[str | None, name_filter("Only this node.")] = None,
    role: Annotated[str | None, name_filter("Only nodes of this role.", 64)] = None,
    start: Annotated[
        Instant | None, Query(description="From this time (inclusive, RFC 3339).")
    ] = None,
    end: Annotated[
        Instant | None, Query(description="Until this time (exclusive, RFC 3339).")
    ] = None,
    limit: Annotated[
        int, Query(ge=1, le=100_000, description="Most node points returned.")
    ] = 10_000,
) -> SeriesOut:
    job = jobs.get_job(session, job_ref)
    query = samples.SampleQuery(node=node, role=role, start=start, end=end, limit=limit + 1)
    points = samples.node_samples(session, job, query)
    truncated = len(points) > limit
    speed = samples.speed_samples(session, job, query) if node is None and role is None else []
    return SeriesOut(
        nodes=points[:limit],
        speed=speed[:limit],
        truncated=truncated,
    )


@router.put(
    "/nodes/{name}",
    response_model=NodeOut,
    responses={201: {"model": NodeOut, "description": "Created"}},
    summary="Register or update a node with what it requests",
)
def put_node(
    job_ref: JobRefDep,
    name: NodeName,
    spec: NodeIn,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
) -> NodeOut:
    reject_future(
        [("created_at", spec.created_at), ("finished_at", spec.finished_at)],
        utcnow(),
        settings.clock_skew_s,
    )
    job = jobs.get_job(session, job_ref)
    node, created = nodes.upsert_node(session, job, name, nodes.NodeInput(**spec.model_dump()))
    response.status_code = 201 if created else 200
    return NodeOut.model_validate(node, from_attributes=True)


@router.get(
    "/nodes", response_model=list[NodeOut], summary="List a job's nodes", responses=csv_responses()
)
def list_nodes(
    job_ref: JobRefDep,
    session: ReadSessionDep,
    format: Annotated[ListFormat | None, format_query("one node a row")] = None,
):
    job = jobs.get_job(session, job_ref)
    items = [
        NodeOut.model_validate(n, from_attributes=True) for n in nodes.list_nodes(session, job)
    ]
    return csv_of(NodeOut, items) if format == ListFormat.csv else items
