"""The gRPC error table beside the REST one: every domain error has a place in both."""

from __future__ import annotations

import grpc
from sqlalchemy.exc import OperationalError

import brain.errors
from api.dlrover.errors import STATUS_BY_ERROR, outcome_of, status_of
from api.errors import STATUS_BY_ERROR as REST_STATUS_BY_ERROR
from brain.errors import BrainError, Forbidden, NotFound


def _domain_errors() -> set[type[BrainError]]:
    return {
        value
        for value in vars(brain.errors).values()
        if isinstance(value, type) and issubclass(value, BrainError) and value is not BrainError
    }


def test_every_domain_error_is_mapped_for_grpc_as_for_rest():
    assert len(_domain_errors()) == 6
    assert set(STATUS_BY_ERROR) == _domain_errors() == set(REST_STATUS_BY_ERROR)


def test_a_refusal_keeps_the_errors_message_and_a_database_down_is_unavailable():
    assert status_of(Forbidden("scope read")) == (grpc.StatusCode.PERMISSION_DENIED, "scope read")
    down = OperationalError("SELECT 1", {}, Exception("refused"))
    assert status_of(down) == (grpc.StatusCode.UNAVAILABLE, "the database cannot be reached")


def test_an_empty_answer_counts_a_domain_error_as_invalid_and_anything_else_as_error():
    assert outcome_of(NotFound("no job")) == "invalid"
    assert outcome_of(RuntimeError("database on fire")) == "error"
