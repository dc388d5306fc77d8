"""Schemathesis over every writing operation of the OpenAPI, then a look at what the
store holds: no stored name holds a control, format (bidirectional, zero-width) or
line-separator character, whatever the generated requests carried.

Positive requests fit the schema (a name field's ``pattern`` states the rule), negative
ones break it, so names holding refused characters are among them; both kinds run, half
on a registered job so that job routes reach past the 404. Bounded and reproducible as
``test_fuzz.py`` is: a fixed number of examples per operation, derandomized.
"""

from __future__ import annotations

import hypothesis
import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis import GenerationMode

from api.app import create_app
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine
from tests.builders import job_body
from tests.builders.names import stored_names_refused

EXAMPLES_PER_OPERATION = 25
OPENAPI = create_app(Settings()).openapi()
WRITES = [
    (method.upper(), path)
    for path, methods in OPENAPI["paths"].items()
    for method in methods
    if method in ("put", "post", "patch")
]


@pytest.fixture(scope="module")
def names_url(make_pg_database) -> str:
    url = make_pg_database()
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="module")
def api_schema(names_url):
    # Authentication off: a generated POST /api/v1/tokens would otherwise turn it on.
    settings = Settings(database_url=names_url, auth="disabled")
    with TestClient(create_app(settings)) as client:
        assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    schema = schemathesis.openapi.from_dict(create_app(settings).openapi())
    schema.app = create_app(settings)
    return schema


@pytest.fixture(scope="module")
def names_engine(names_url):
    engine = make_engine(names_url)
    yield engine
    engine.dispose()


def test_the_sweep_covers_every_route_that_stores_a_name():
    assert {
        ("PUT", "/api/v1/jobs/{uid}"),
        ("PUT", "/api/v1/jobs/{uid}/nodes/{name}"),
        ("POST", "/api/v1/jobs/{uid}/samples"),
        ("POST", "/api/v1/jobs/{uid}/events"),
        ("POST", "/api/v1/jobs/{uid}/optimize"),
        ("POST", "/api/v1/tokens"),
    } <= set(WRITES)


@pytest.mark.parametrize(("method", "path"), WRITES, ids=[" ".join(w) for w in WRITES])
def test_no_generated_request_stores_a_name_with_a_refused_character(
    api_schema, names_engine, method, path
):
    operation = api_schema[path][method]
    strategy = operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    strategy |= operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
    if "{uid}" in path:  # half the cases on the registered job, to reach past the 404
        for mode in GenerationMode:
            strategy |= operation.as_strategy(generation_mode=mode, path_parameters={"uid": "j"})

    @hypothesis.given(case=strategy)
    @hypothesis.settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    def send(case) -> None:
        answer = case.call()
        assert answer.status_code < 500, (case.formatted_path, answer.text[:300])

    send()
    assert stored_names_refused(names_engine) == []
