"""Suggestions for data scientists: what a new run should request (curl-friendly)."""

from __future__ import annotations

from enum import StrEnum

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse

from api.deps import SessionDep, get_registry, get_settings
from api.errors import ERROR_RESPONSES
from api.schemas.suggestions import SuggestionOut
from brain.config import Settings
from brain.errors import InvalidInput
from brain.optimizing import OptimizerRegistry
from brain.summaries.suggestions import SuggestionQuery, suggest

router = APIRouter(prefix="/api/v1/suggestions", tags=["suggestions"], responses=ERROR_RESPONSES)

TEXT_EXAMPLE = """role    count  cpu_request  cpu_limit  memory_mib  gpu
ps          2          6.5          -       12288    -
chief       -          4.2          -        9216    -
worker      8          3.4        7.2       16384    1
basis: confidence high: 3 past runs matched by group in the last 90 days (r-103 2026-05-03, ...)
"""


class Format(StrEnum):
    json = "json"
    text = "text"


@router.get(
    "",
    response_model=SuggestionOut,
    summary="What a new run should request, per role",
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}, "example": TEXT_EXAMPLE}},
            "description": "JSON, or with `format=text` / `Accept: text/plain` a table.",
        }
    },
)
def get_suggestion(
    request: Request,
    session: SessionDep,
    user: str | None = Query(None, description="Who will run it."),
    name: str | None = Query(None, description="Job name."),
    dataset: str | None = Query(None, description="Dataset it trains on."),
    group: str | None = Query(
        None, description="Group key of its recurring runs; defaults to `<user>/<name>`."
    ),
    gpu_type: str | None = Query(None, description="Only learn from runs on this GPU type."),
    format: Format | None = Query(None, description="`text` for a terminal table."),
    settings: Settings = Depends(get_settings),
    registry: OptimizerRegistry = Depends(get_registry),
):
    """Runs the create-stage optimizers (startup sizing, GPU/CPU suggestion) on the
    succeeded runs related to the query (same user and dataset, else the same group,
    else the same name) and answers per role `count`, `cpu_request` and `cpu_limit`
    (cores), `memory_mib`, `gpu`. `basis` names the runs used; without any, the values
    are the optimizers' defaults and the note says so (200, not 404)."""
    if user is None and name is None and dataset is None and group is None:
        raise InvalidInput("give at least one of user, name, dataset, group", field="user")
    query = SuggestionQuery(
        user=user, name=name, dataset=dataset, group_key=group, gpu_type=gpu_type
    )
    out = SuggestionOut.of(suggest(session, registry, settings, query))
    wants_text = format == Format.text or (
        format is None and "text/plain" in request.headers.get("accept", "")
    )
    if wants_text:
        return PlainTextResponse(out.to_text())
    return out
