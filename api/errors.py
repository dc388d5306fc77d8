"""Every error leaves as ``{"error": {"code", "message", "field"}}``."""

from __future__ import annotations

import logging

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

log = logging.getLogger(__name__)

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
    # A union's member shows in the location as its tag ("str-enum[JobStatus]", "none"):
    # the caller knows the field by its name only.
    parts = [
        str(p) for p in loc if p not in ("body", "query", "path", "header") and not _is_union_tag(p)
    ]
    return ".".join(parts) or None


def _is_union_tag(part) -> bool:
    return isinstance(part, str) and ("[" in part or part == "none")


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
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
    if loc[:1] == ("body",) and not _says_json(request.headers.get("content-type")):
        return JSONResponse(
            status_code=422,
            content=error_body("validation_error", _not_sent_as_json(request), "content-type"),
        )
    field = _field_of(loc)
    message = _message(first, loc)
    if field:
        message = f"{field}: {message}"
    return JSONResponse(status_code=422, content=error_body("validation_error", message, field))


def _says_json(content_type: str | None) -> bool:
    subtype = (content_type or "").split(";")[0].strip().lower().rpartition("/")[2]
    return subtype == "json" or subtype.endswith("+json")


def _not_sent_as_json(request: Request) -> str:
    given = request.headers.get("content-type")
    sent = "without a content-type header" if not given else f"as {given.split(';')[0]}"
    return (
        f"the body was sent {sent}; Brain reads only JSON: send the header "
        "`content-type: application/json` (curl: -H 'content-type: application/json')"
    )


def _message(error: dict, loc: tuple) -> str:
    """Pydantic's message, said in the API's terms where it would leave the caller
    guessing: an enum's allowed values, and a body of the wrong shape."""
    kind, given = error.get("type"), error.get("input")
    if kind == "enum":
        expected = error.get("ctx", {}).get("expected", "")
        return f"{given!r} is not allowed; allowed values: {expected}"
    if loc == ("body",) and kind == "list_type":
        if isinstance(given, dict) and given:
            keys = ", ".join(repr(k) for k in list(given)[:3])
            return (
                f"the body must be a JSON array, not an object (keys {keys}): send the "
                "list itself, [...], without wrapping it in an object"
            )
        return "the body must be a JSON array, [...]"
    if loc == ("body",) and kind in ("dict_type", "model_type", "model_attributes_type"):
        if isinstance(given, list):
            return "the body must be a JSON object, {...}, not an array"
        return "the body must be a JSON object, {...}"
    return error.get("msg", "invalid input")


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


async def _database_down(request: Request, exc: OperationalError) -> JSONResponse:
    """The database is unreachable, or refused the statement as a whole (psycopg raises
    OperationalError for both): logged with its traceback, since the answer cannot say
    which, and a statement refused that way is a defect of Brain's, not the caller's."""
    # The driver's error on the traceback of Brain's call: SQLAlchemy's own message
    # repeats the statement and every parameter (megabytes for a large batch).
    cause = exc.orig if isinstance(exc.orig, BaseException) else exc
    log.error(
        "%s %r: database error, answered 503",
        request.method,
        request.url.path,
        exc_info=(type(cause), cause, exc.__traceback__),
    )
    return JSONResponse(
        status_code=503,
        content=error_body("database_unavailable", "the database cannot be reached; retry later"),
    )


async def _rejected_by_database(request: Request, exc: DataError) -> JSONResponse:
    """A value the schema let through but the database refuses (a bound the schema
    should state): the transaction is rolled back, so nothing changed."""
    reason = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
    log.warning("%s %r: the database refused a value: %r", request.method, request.url.path, reason)
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
