"""How Brain's errors leave the gRPC service: one table, as ``api/errors.py`` is for REST.

A call refused before its handler runs (the token check, ``api.dlrover.auth``) ends with
the gRPC status below. A handler never raises to DLRover's master, which takes any error
for "no plan" and logs its traceback: it answers empty, its reason saying why, and the
call is counted in ``brain_grpc_requests_total`` under ``OUTCOME_BY_ERROR``.
"""

from __future__ import annotations

import grpc
from sqlalchemy.exc import SQLAlchemyError

from brain.errors import (
    BrainError,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TooLarge,
    Unauthorized,
)

STATUS_BY_ERROR: dict[type[BrainError], grpc.StatusCode] = {
    NotFound: grpc.StatusCode.NOT_FOUND,
    Conflict: grpc.StatusCode.FAILED_PRECONDITION,
    InvalidInput: grpc.StatusCode.INVALID_ARGUMENT,
    TooLarge: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Unauthorized: grpc.StatusCode.UNAUTHENTICATED,
    Forbidden: grpc.StatusCode.PERMISSION_DENIED,
}
DATABASE_DOWN = (grpc.StatusCode.UNAVAILABLE, "the database cannot be reached")
# A handler's empty answer: to a domain error (the request cannot be served), or to any
# other exception (Brain failed).
INVALID, FAILED = "invalid", "error"


def status_of(exc: BrainError | SQLAlchemyError) -> tuple[grpc.StatusCode, str]:
    """The status and message of a call refused by ``exc``."""
    if isinstance(exc, SQLAlchemyError):
        return DATABASE_DOWN
    return STATUS_BY_ERROR.get(type(exc), grpc.StatusCode.INVALID_ARGUMENT), exc.message


def outcome_of(exc: Exception) -> str:
    """The outcome a handler's empty answer to ``exc`` is counted under."""
    return INVALID if isinstance(exc, BrainError) else FAILED
