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
from api.schemas.jobs import JobSpec
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.db.models import Base
from brain.services.jobs import upsert_job
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
def fuzz_url(make_pg_database) -> str:
    url = make_pg_database()
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="module")
def api_schema(fuzz_url):
    url = fuzz_url
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


def test_sequences_of_operations_answer_as_documented(api_schema, fuzz_url):
    """The stateful phase: sequences of calls where later ones use what earlier ones
    answered (links schemathesis infers: a job PUT then its samples, plans, ...), with
    the same checks: no server error, no undocumented status."""
    machine = api_schema.as_state_machine()
    failures: list[str] = []

    class Sequences(machine):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            # Each sequence starts from the same stored state (the one job), so that the
            # same choices meet the same answers: Hypothesis requires it of a sequence.
            _reset(fuzz_url)

        def before_call(self, case) -> None:
            if case.query and "wait" in case.query:
                case.query["wait"] = 0  # the long-poll would hold each step up to 60 s

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            # Collected, not raised: a raise makes Hypothesis replay the sequence, and the
            # database has moved on since (the replay then differs and hides the failure).
            try:
                case.validate_response(response, checks=CHECKS)
            except Exception as exc:  # noqa: BLE001 (every check failure is reported below)
                failures.append(
                    f"{case.method} {case.formatted_path} {case.query} -> "
                    f"{response.status_code} {response.text[:300]}: {exc!r:.500}"
                )

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
    assert not failures, "\n".join(failures[:10])


def _reset(url: str) -> None:
    """Every table emptied, then the one job registered again (on an engine of its own:
    the app's is made when its lifespan starts, at its first call)."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(table.delete())
        with make_session_factory(engine)() as session:
            upsert_job(session, "j", JobSpec.model_validate(job_body()).to_input())
            session.commit()
    finally:
        engine.dispose()
