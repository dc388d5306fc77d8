"""What only an administrator may do over HTTP: manage API tokens, age out raw samples.

The same operations as `brain token` and `brain retention`, for platforms that manage
Brain through its API. Every route needs an `admin` token valid for every namespace.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from api.csv_text import ListFormat, csv_of, csv_responses, format_query
from api.deps import ReadSessionDep, SessionDep, SettingsDep
from api.errors import ERROR_RESPONSES
from api.routing import InputRoute
from api.schemas.admin import NewTokenOut, RetentionIn, RetentionOut, TokenIn, TokenOut
from api.schemas.common import NO_NUL
from brain.domain import utcnow
from brain.errors import InvalidInput
from brain.services import tokens
from brain.summaries.retention import delete_old_samples

router = APIRouter(
    prefix="/api/v1", tags=["admin"], responses=ERROR_RESPONSES, route_class=InputRoute
)
TokenName = Annotated[
    str, Path(min_length=1, max_length=128, pattern=NO_NUL, description="The token's name.")
]


@router.get(
    "/tokens", response_model=list[TokenOut], summary="List API tokens", responses=csv_responses()
)
def list_tokens(
    session: ReadSessionDep,
    format: Annotated[ListFormat | None, format_query("one token a row")] = None,
):
    """Every token, revoked and expired ones included; never a secret."""
    items = [TokenOut.model_validate(token) for token in tokens.list_tokens(session)]
    return csv_of(TokenOut, items) if format == ListFormat.csv else items


@router.post(
    "/tokens",
    response_model=NewTokenOut,
    status_code=201,
    summary="Create an API token (its secret is shown once)",
    responses={409: {"description": "A token with that name exists."}},
)
def create_token(body: TokenIn, session: SessionDep) -> NewTokenOut:
    created = tokens.create_token(
        session, body.name, body.scope, body.namespaces, body.expires_at, utcnow()
    )
    return NewTokenOut(**TokenOut.model_validate(created.token).model_dump(), secret=created.secret)


@router.delete("/tokens/{name}", response_model=TokenOut, summary="Revoke an API token")
def revoke_token(name: TokenName, session: SessionDep) -> TokenOut:
    """The token stays listed with its `revoked_at`; revoking twice changes nothing. Every
    server process (each worker, a gRPC server) refuses it from its next request on."""
    token = tokens.revoke_token(session, name, utcnow())
    return TokenOut.model_validate(token)


@router.post(
    "/retention", response_model=RetentionOut, summary="Delete old raw samples of summarized jobs"
)
def run_retention(
    session: SessionDep, settings: SettingsDep, body: RetentionIn | None = None
) -> RetentionOut:
    """Portraits and suggestions read job summaries, so raw samples of summarized jobs can
    go once they are older than the retention: `older_than_days`, else
    `BRAIN_RETENTION_DAYS` (the body may be left out)."""
    days = (body.older_than_days if body else None) or settings.retention_days
    if days is None:
        raise InvalidInput(
            "give older_than_days, or set BRAIN_RETENTION_DAYS", field="older_than_days"
        )
    deleted = delete_old_samples(session, days, utcnow())
    return RetentionOut(older_than_days=days, deleted_samples=deleted)
