"""Schemathesis over the whole OpenAPI: no server error and no status code the schema
does not document, for generated valid and invalid requests on every operation.

Bounded and reproducible: a fixed number of examples per operation, derandomized
(Hypothesis's fixed seed), no example database. One app on its own PostgreSQL database
for the module, with one job registered so that job paths reach past the 404.
"""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from brain.config import Settings
from brain.db import migrate
from tests.builders import job_body

EXAMPLES_PER_OPERATION = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
OPENAPI = create_app(Settings()).openapi()
# Negative cases need something to break: a parameter or a body.
CASES = [
    (method.upper(), path, mode)
    for path, methods in OPENAPI["paths"].items()
    for method, operation in methods.items()
    for mode in GenerationMode
    if mode == GenerationMode.POSITIVE or operation.get("parameters") or "requestBody" in operation
]


@pytest.fixture(scope="module")
def api_schema(make_pg_database):
    url = make_pg_database()
    migrate.upgrade(url)
    # Authentication off for good: a generated POST /api/v1/tokens would otherwise turn
    # it on (loopback is open only while no token exists) and the rest would all be 401.
    settings = Settings(database_url=url, auth="disabled")
    with TestClient(create_app(settings)) as client:  # a job for generated paths to find
        assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    app = create_app(settings)
    schema = schemathesis.openapi.from_dict(app.openapi())
    schema.app = app  # calls go to the app in process (its lifespan started once)
    return schema


@pytest.mark.parametrize(("method", "path", "mode"), CASES, ids=[" ".join(c) for c in CASES])
def test_every_operation_answers_as_documented(api_schema, method, path, mode):
    """``positive`` requests fit the schema, ``negative`` ones break it somewhere."""
    operation = api_schema[path][method]

    strategy = operation.as_strategy(generation_mode=mode)
    if "{uid}" in path:  # half the cases on the registered job, to reach past the 404
        strategy |= operation.as_strategy(generation_mode=mode, path_parameters={"uid": "j"})

    @hypothesis.given(case=strategy)
    @hypothesis.settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    def answers_as_documented(case) -> None:
        if case.query and "wait" in case.query:
            case.query["wait"] = 0  # the long-poll would hold each example up to 60 s
        case.call_and_validate(checks=CHECKS)

    answers_as_documented()


STATEFUL_SCENARIOS = 30
STATEFUL_STEPS = 8


def test_sequences_of_operations_answer_as_documented(api_schema):
    """The stateful phase: sequences of calls where later ones use what earlier ones
    answered (links schemathesis infers: a job PUT then its samples, plans, ...), with
    the same checks: no server error, no undocumented status."""
    machine = api_schema.as_state_machine()

    class Sequences(machine):  # type: ignore[misc, valid-type]
        def before_call(self, case) -> None:
            if case.query and "wait" in case.query:
                case.query["wait"] = 0  # the long-poll would hold each step up to 60 s

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            case.validate_response(response, checks=CHECKS)

    Sequences.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )
