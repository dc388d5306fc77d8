"""Every error leaves as ``{"error": {"code", "message", "field"}}``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DataError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolExhausted
from starlette.exceptions import HTTPException as StarletteHTTPException

from brain.errors import (
    BrainError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TooLarge,
    Unauthorized,
)

STATUS_BY_ERROR: dict[type[BrainError], int] = {
    NotFound: 404,
    Conflict: 409,
    InvalidInput: 422,
    TooLarge: 413,
    Unauthorized: 401,
    Forbidden: 403,
}


def error_body(code: str, message: str, field: str | None = None) -> dict:
    return {"error": {"code": code, "message": message, "field": field}}


def _field_of(loc: tuple) -> str | None:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or None


async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    first = exc.errors()[0]
    if first.get("type") == "json_invalid":
        reason = first.get("ctx", {}).get("error", "malformed")
        return JSONResponse(
            status_code=422,
            content=error_body("validation_error", f"the body is not valid JSON: {reason}"),
        )
    loc = tuple(first.get("loc", ()))
    if loc == ("body",) and first.get("type") == "missing":
        return JSONResponse(
            status_code=422, content=error_body("validation_error", "a JSON body is required")
        )
    field = _field_of(loc)
    message = first.get("msg", "invalid input")
    if field:
        message = f"{field}: {message}"
    return JSONResponse(status_code=422, content=error_body("validation_error", message, field))


async def _brain_error(_request: Request, exc: BrainError) -> JSONResponse:
    status = STATUS_BY_ERROR.get(type(exc), 400)
    return JSONResponse(status_code=status, content=error_body(exc.code, exc.message, exc.field))


async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = {
        400: "bad_request",
        404: "not_found",
        405: "method_not_allowed",
        413: "payload_too_large",
    }.get(exc.status_code, "http_error")
    return JSONResponse(
        status_code=exc.status_code,
        content=error_body(code, str(exc.detail)),
        headers=getattr(exc, "headers", None),
    )


async def _database_down(_request: Request, _exc: OperationalError) -> JSONResponse:
    return JSONResponse(
        status_code=503,
        content=error_body("database_unavailable", "the database cannot be reached; retry later"),
    )


async def _rejected_by_database(_request: Request, exc: DataError) -> JSONResponse:
    """A value the schema let through but the database refuses (a bound the schema
    should state): the transaction is rolled back, so nothing changed."""
    reason = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
    return JSONResponse(
        status_code=422,
        content=error_body("invalid", f"the database refused a value: {reason}"),
    )


async def _overloaded(_request: Request, _exc: PoolExhausted) -> JSONResponse:
    """Every pooled connection stayed busy past the pool's timeout: too many requests
    at once for this server (scripts/bench_load.py finds where); the caller retries."""
    return JSONResponse(
        status_code=503,
        content=error_body("overloaded", "every database connection is busy; retry later"),
        headers={"Retry-After": "1"},
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(BrainError, _brain_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(OperationalError, _database_down)
    app.add_exception_handler(PoolExhausted, _overloaded)
    app.add_exception_handler(DataError, _rejected_by_database)


ERROR_RESPONSES = {
    400: {
        "description": "The request cannot be read: a body that is not parseable (e.g. JSON "
        "nested too deep), or a path that is not UTF-8 once percent-decoded (`bad_request`)."
    },
    404: {"description": 'Not found: `{"error": {"code", "message", "field"}}`'},
    422: {"description": "Invalid input; `error.field` names the offending field."},
    503: {
        "description": "The database cannot be reached (`database_unavailable`), its "
        "schema is behind this version (`schema_out_of_date`), or every connection is busy "
        "(`overloaded`); retry later."
    },
}
