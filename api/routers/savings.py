"""Savings a platform can check: Brain's defaults replayed on its own finished jobs."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from api.auth import CurrentPrincipal
from api.csv_text import ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, RegistryDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.routing import InputRoute
from api.schemas.savings import SavingsBy, SavingsOut, SavingsRowOut
from brain.domain import utcnow
from brain.savings.report import savings

router = APIRouter(
    prefix="/api/v1/savings", tags=["savings"], responses=ERROR_RESPONSES, route_class=InputRoute
)


@router.get(
    "",
    response_model=SavingsOut,
    summary="What Brain would have saved, and did",
    responses=csv_responses(),
)
def site_savings(
    session: ReadSessionDep,
    settings: SettingsDep,
    registry: RegistryDep,
    principal: CurrentPrincipal,
    days: Annotated[
        int, Query(ge=1, le=3650, description="Window: jobs that ended in the last N days.")
    ] = 30,
    by: Annotated[SavingsBy, Query(description="Group the rows by namespace or group key.")] = (
        SavingsBy.namespace
    ),
    format: Annotated[
        ListFormat | None, format_query("one namespace or group a row, then the `total` row")
    ] = None,
):
    """On the finished jobs of the window: the main role's requested and used core-,
    GiB- and GPU-hours, and apart every role's (`all_roles_*`, as the console and the
    portraits count them); what Brain's default pipeline would have allocated, replayed on
    each job's stored samples (create stage from the group's earlier runs, running stage
    every 5 minutes, OOM kills answered by the OOM stage), with the OOM kills of that
    replay; what the applied plans saved; and each in dollars at the prices in effect
    (`prices` names them: BRAIN_PRICE_*, else the default table). The
    replay is stored with each job's final summary (the summary refresher, `brain
    summarize`); jobs not replayed yet are replayed on this request. A
    namespace-restricted token sees only its namespaces' jobs."""
    since = utcnow() - timedelta(days=days)
    report = savings(
        session, registry, settings, since, by=by.value, namespaces=principal.namespaces
    )
    rows = [SavingsRowOut(**row.as_dict()) for row in report.rows]
    total = SavingsRowOut(**report.total.as_dict())
    if format == ListFormat.csv:
        return csv_of(SavingsRowOut, [*rows, total])
    return SavingsOut(
        days=days,
        since=since,
        by=by,
        priced=report.priced,
        prices=report.price_label,
        rows=rows,
        total=total,
    )
