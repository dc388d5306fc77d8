"""Suggestions for data scientists: what a new run should request (curl-friendly)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse

from api.auth import every_namespace
from api.csv_text import csv_of
from api.deps import RegistryDep, SettingsDep, SizingModelDep, UpgradableReadSessionDep
from api.errors import ERROR_RESPONSES
from api.params import name_filter
from api.routing import InputRoute
from api.schemas.suggestions import RoleSuggestionOut, SuggestionCostOut, SuggestionOut
from brain.errors import InvalidInput
from brain.portraits.spend import run_spend
from brain.portraits.suggestions import SuggestionQuery, suggest

router = APIRouter(
    prefix="/api/v1/suggestions",
    tags=["suggestions"],
    responses=ERROR_RESPONSES,
    route_class=InputRoute,
)

TEXT_EXAMPLE = """role    count  cpu_request  cpu_limit  memory_mib  oom_risk  gpu
ps          2          6.5          -       12288     0.48%    -
chief       -          4.2          -        9216     0.12%    -
worker      8          3.4        7.2       16384     0.50%    1
basis: confidence high: 3 past runs matched by group in the last 90 days (r-103 2026-05-03, ...)
why:
  learned_margin: worker over 3 runs: memory envelope 11500.00 x 1.36 + headroom -> 16384 MiB ...
"""


class Format(StrEnum):
    json = "json"
    text = "text"
    csv = "csv"


@router.get(
    "",
    dependencies=[Depends(every_namespace)],
    response_model=SuggestionOut,
    summary="What a new run should request, per role",
    responses={
        200: {
            "content": {
                "text/plain": {"schema": {"type": "string"}, "example": TEXT_EXAMPLE},
                "text/csv": {"schema": {"type": "string"}},
            },
            "description": "JSON, or with `format=text` / `Accept: text/plain` a table, or "
            "with `format=csv` the roles as CSV (a header row and one role a row).",
        }
    },
)
def get_suggestion(
    request: Request,
    # A related run that finished moments ago is summarized here: now and then a write.
    session: UpgradableReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    sizing_model: SizingModelDep,
    user: Annotated[str | None, name_filter("Who will run it.", 128)] = None,
    name: Annotated[str | None, name_filter("Job name.")] = None,
    dataset: Annotated[str | None, name_filter("Dataset it trains on.")] = None,
    group: Annotated[
        str | None,
        name_filter("Group key of its recurring runs; defaults to `<user>/<name>`.", 400),
    ] = None,
    gpu_type: Annotated[
        str | None, name_filter("Only learn from runs on this GPU type.", 128)
    ] = None,
    format: Annotated[
        Format | None,
        Query(
            description="`text` for a terminal table; `csv` for the roles as CSV, a header "
            "row (also with no role) and one role a row."
        ),
    ] = None,
):
    """Runs the create-stage optimizers (startup sizing, GPU/CPU suggestion, then
    learned_margin's memory and CPU) on the succeeded runs related to the query (same
    user and dataset, else the same group, else the same name; a user alone: their
    runs) and answers per role `count`, `cpu_request` and `cpu_limit` (cores),
    `memory_mib`, `oom_risk` (with a trained model: the calibrated probability that the
    next run's memory peak exceeds `memory_mib`), `gpu`. `basis` names the runs used;
    without any, the values are the optimizers' defaults and the note says so (200, not
    404)."""
    if user is None and name is None and dataset is None and group is None:
        raise InvalidInput("give at least one of user, name, dataset, group", field="user")
    query = SuggestionQuery(
        user=user, name=name, dataset=dataset, group_key=group, gpu_type=gpu_type
    )
    found = suggest(session, registry, settings, query, sizing_model=sizing_model)
    out = SuggestionOut.model_validate(found)
    spend = run_spend(session, found, settings.prices, gpu_type)
    out.cost = None if spend is None else SuggestionCostOut.model_validate(spend)
    wants_text = format == Format.text or (
        format is None and "text/plain" in request.headers.get("accept", "")
    )
    if wants_text:
        return PlainTextResponse(out.to_text())
    if format == Format.csv:
        return csv_of(RoleSuggestionOut, out.roles)
    return out
