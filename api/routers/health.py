"""Liveness, readiness and the service's own metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.state import server_state
from brain.config import MetricsTenants
from brain.db.engine import ping
from brain.portraits.metrics import Scoped
from brain.services.tokens import TokenScope, bearer_secret

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="The database is reachable and migrated (503 otherwise); components report their state",
    responses={
        503: {
            "description": "The database cannot be reached, or its schema is not "
            "the one this Brain needs (`checks.schema` names the command to run)."
        }
    },
)
def readyz(request: Request) -> JSONResponse:
    """Ready means the database answers and its schema is current. A degraded component
    (e.g. the Prometheus collector) is reported but does not make the API unready: the
    API keeps serving."""
    checks: dict[str, dict] = {}
    try:
        ping(server_state(request.app).engine)
        checks["database"] = {"status": "ok"}
    except Exception as exc:
        checks["database"] = {"status": "down", "detail": type(exc).__name__}
    schema = server_state(request.app).schema_gate.status()
    if schema is not None:
        checks["schema"] = {"status": "ok" if schema.up_to_date else "out_of_date"}
        checks["schema"].update(applied=schema.applied, head=schema.head)
        if not schema.up_to_date:
            checks["schema"].update(code="schema_out_of_date", detail=schema.problem())
    for name, report in server_state(request.app).health_reporters.items():
        checks[name] = report()
    ready = checks["database"]["status"] == "ok" and schema is not None and schema.up_to_date
    body = {"status": "ready" if ready else "unavailable", "checks": checks}
    return JSONResponse(status_code=200 if ready else 503, content=body)


@router.get(
    "/metrics",
    summary="Prometheus exposition of Brain's own metrics",
    response_class=PlainTextResponse,
    responses={
        200: {"description": "Prometheus text exposition format."},
        401: {"description": "A token was sent and is unknown, expired or revoked."},
        403: {"description": "The token's scope is below `read`."},
    },
)
def metrics(request: Request) -> Response:
    """The service's own metrics, and the per-tenant series (`brain_namespace_*`,
    `brain_user_*`, `brain_group_*`, each labelled `namespace`) as
    BRAIN_METRICS_TENANT_SERIES lets this caller read them: `public` everyone, `token`
    a caller's token (limited to namespaces: theirs only), `none` nobody. With /metrics
    out of BRAIN_AUTH_PUBLIC_PATHS a token is needed for any of it, and a token limited
    to namespaces reads only theirs whatever the setting."""
    state = server_state(request.app)
    data = generate_latest(Scoped(state.telemetry.registry, _tenants_shown(request)))
    return Response(content=data, media_type=CONTENT_TYPE_LATEST)


def _tenants_shown(request: Request) -> frozenset[str] | None:
    """The namespaces whose tenant series this caller reads (None: every one)."""
    state = server_state(request.app)
    mode = state.settings.metrics_tenant_series
    if mode == MetricsTenants.none:
        return frozenset()
    principal = getattr(request.state, "principal", None)  # /metrics needs a token
    if principal is None and mode == MetricsTenants.token:
        secret = bearer_secret(request.headers.get("authorization"))
        if secret is None and state.auth_policy.open_reason() is None:
            return frozenset()
        principal = state.auth_policy.authenticate(secret)
        principal.require(TokenScope.read, "GET /metrics")
    return None if principal is None else principal.namespaces
