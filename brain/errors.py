"""Errors the services raise; the API turns each into a status and a JSON body."""

from __future__ import annotations


class BrainError(Exception):
    """A problem with a request. ``field`` names the offending input where one does."""

    code = "bad_request"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(BrainError):
    code = "not_found"


def job_not_found(uid: str) -> NotFound:
    return NotFound(f"no job with uid {uid!r}", field="uid")


class Conflict(BrainError):
    code = "conflict"


class InvalidInput(BrainError):
    code = "invalid"


class TooLarge(BrainError):
    code = "payload_too_large"


class Unauthorized(BrainError):
    """No token, or one that is unknown, expired or revoked."""

    code = "unauthorized"


class Forbidden(BrainError):
    """A valid token whose scope or namespaces do not allow the request."""

    code = "forbidden"
