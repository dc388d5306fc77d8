"""The client's models against the server's OpenAPI document, so that the two cannot drift.

``brain.client.models`` re-declares the API's bodies and enums (the client installs
without the server). Each model is compared, through JSON Schema, with the schema of the
operation it is sent to or read from: property names, JSON types (string formats, array
items, map values, nested objects, enum values) and which properties are required.

- What the client sends: the same property names at every depth, and the server takes
  every type the client sends. The client leaves out a ``None`` (``client._dump``),
  so a null it allows only means "not given" and is not compared (the one null it sends,
  ``update_job(exit_reason=None)``, is tested in test_fields.py).
- What the client reads: properties the server sends (a newer server may send more), of
  types the client reads; what the client requires, the server always sends.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from api.app import create_app
from brain.client import models
from brain.config import Settings

OPENAPI = create_app(Settings()).openapi()
COMPONENTS = OPENAPI["components"]["schemas"]

Shape = Any  # a comparable summary of a JSON Schema, built by ``shape``
ANY = ("any",)
NULL = ("null",)


def _resolve(schema: dict, defs: dict) -> dict:
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def shape(schema: dict | bool, defs: dict) -> Shape:
    """The schema as tuples: ("enum", values), ("union", variants), ("array", items),
    ("map", values), ("object", ((name, shape), ...), required names), or a JSON type
    (a string with its format); ANY where the schema says nothing."""
    if schema is True or schema == {}:
        return ANY
    schema = _resolve(schema, defs)
    if "enum" in schema:
        return ("enum", frozenset(schema["enum"]))
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            variants = frozenset(_flatten(shape(sub, defs) for sub in schema[key]))
            return next(iter(variants)) if len(variants) == 1 else ("union", variants)
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema.get("items", True), defs))
    if "properties" in schema:
        props = tuple(sorted((k, shape(v, defs)) for k, v in schema["properties"].items()))
        return ("object", props, frozenset(schema.get("required", ())))
    if kind == "object":
        values = list(schema.get("patternProperties", {}).values())
        return (
            "map",
            shape(values[0] if values else schema.get("additionalProperties", True), defs),
        )
    if kind == "string":
        return ("string", schema.get("format"))
    if kind is None:
        return ANY
    return (kind,)


def _flatten(shapes) -> list[Shape]:
    return [v for s in shapes for v in (s[1] if s[0] == "union" else (s,))]


def _variants(s: Shape) -> frozenset:
    return s[1] if s[0] == "union" else frozenset({s})


def _without_null(s: Shape) -> Shape:
    if s[0] != "union":
        return s
    rest = s[1] - {NULL}
    return next(iter(rest)) if len(rest) == 1 else ("union", rest)


def mismatches(reader: Shape, sent: Shape, *, request: bool, at: str = "") -> list[str]:
    """Where ``reader`` would not take what ``sent`` holds (a request: the server reads
    the client's; an answer: the client reads the server's)."""
    if request:
        reader, sent = _without_null(reader), _without_null(sent)
    if reader in (ANY, sent):
        return []
    if sent[0] == "union" or reader[0] == "union":
        problems = []
        for variant in _variants(sent):
            tried = [mismatches(r, variant, request=request, at=at) for r in _variants(reader)]
            if all(tried):
                problems.append(f"{at or 'body'}: {variant} is not one of {reader}")
        return problems
    if reader[0] != sent[0]:
        if (reader, sent) == (("number",), ("integer",)):
            return []
        return [f"{at or 'body'}: reads {reader}, gets {sent}"]
    if reader[0] == "enum":
        extra = sent[1] - reader[1]
        return [f"{at}: values {sorted(extra)} not read"] if extra else []
    if reader[0] in ("array", "map"):
        return mismatches(reader[1], sent[1], request=request, at=f"{at}[]")
    if reader[0] == "object":
        return _object_mismatches(reader, sent, request=request, at=at)
    return [f"{at or 'body'}: reads {reader}, gets {sent}"]


def _object_mismatches(reader: Shape, sent: Shape, *, request: bool, at: str) -> list[str]:
    read, given = dict(reader[1]), dict(sent[1])
    problems = []
    if request:
        if set(read) != set(given):
            problems.append(f"{at}: the API takes {sorted(read)}, the client {sorted(given)}")
        if not_sent := reader[2] - sent[2]:
            problems.append(f"{at}: the API requires {sorted(not_sent)}, the client may omit them")
    else:
        if unknown := set(read) - set(given):
            problems.append(f"{at}: the client reads {sorted(unknown)}, never sent")
        if missing := reader[2] - sent[2]:
            problems.append(f"{at}: the client requires {sorted(missing)}, not always sent")
    for name in set(read) & set(given):
        problems += mismatches(read[name], given[name], request=request, at=f"{at}.{name}")
    return problems


def client_shape(model: type[BaseModel], mode: str) -> Shape:
    schema = model.model_json_schema(mode=mode)
    return shape(schema, schema.get("$defs", {}))


def server_shape(method: str, path: str, *where: str) -> Shape:
    """The request body of an operation (``where`` empty), or its answer ``("200",)``, or
    one property's items deeper in (``("nodes",)``: the items of the body's ``nodes``)."""
    operation = OPENAPI["paths"][path][method]
    if where and where[0].isdigit():
        schema = operation["responses"][where[0]]["content"]["application/json"]["schema"]
        where = where[1:]
    else:
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
    for name in where:
        schema = _resolve(schema, COMPONENTS)["properties"][name]
    found = shape(schema, COMPONENTS)
    return found[1] if found[0] == "array" else found


JOB = "/api/v1/jobs/{uid}"
SENT = [
    (models.JobRegistration, ("put", JOB)),
    (models.JobUpdate, ("patch", JOB)),
    (models.NodeRegistration, ("put", f"{JOB}/nodes/{{name}}")),
    (models.NodeUsage, ("post", f"{JOB}/samples", "nodes")),
    (models.SpeedPoint, ("post", f"{JOB}/samples", "speed")),
    (models.Event, ("post", f"{JOB}/events")),
    (models.ClusterStatePush, ("post", "/api/v1/cluster/state")),
]
READ = [
    (models.Ingested, ("post", f"{JOB}/samples", "200")),
    (models.Ingested, ("post", f"{JOB}/events", "200")),
    (models.Plan, ("post", f"{JOB}/optimize", "200")),
    (models.Plan, ("get", f"{JOB}/plans/latest", "200")),
    (models.Plan, ("post", f"{JOB}/plans/{{plan_id}}/status", "200")),
]


def _id(value) -> str:
    return value.__name__ if isinstance(value, type) else " ".join(value[:2])


@pytest.mark.parametrize(("model", "operation"), SENT, ids=_id)
def test_what_the_client_sends_the_api_takes(model, operation):
    server = server_shape(*operation)
    assert mismatches(server, client_shape(model, "serialization"), request=True) == []


@pytest.mark.parametrize(("model", "operation"), READ, ids=_id)
def test_what_the_client_reads_the_api_sends(model, operation):
    server = server_shape(*operation)
    assert mismatches(client_shape(model, "validation"), server, request=False) == []


@pytest.mark.parametrize(
    "enum",
    [models.JobStatus, models.Strategy, models.EventKind, models.Stage, models.PlanStatus],
    ids=lambda e: e.__name__,
)
def test_the_clients_enums_spell_the_apis_values(enum):
    assert [m.value for m in enum] == COMPONENTS[enum.__name__]["enum"]


def test_the_comparison_sees_a_drift():
    """A renamed field, a changed type, a lost enum value and a new required field of
    the API's are each reported (so the tests above can fail)."""

    def obj(props: dict, required=()) -> dict:
        return {"type": "object", "properties": props, "required": list(required)}

    api = shape(obj({"cpu": {"type": "number"}, "kind": {"enum": ["a", "b"]}}, ["cpu"]), {})
    assert mismatches(api, api, request=True) == []
    renamed = obj({"cpus": {"type": "number"}, "kind": {"enum": ["a", "b"]}}, ["cpus"])
    assert mismatches(api, shape(renamed, {}), request=True)
    as_text = obj({"cpu": {"type": "string"}, "kind": {"enum": ["a", "b"]}}, ["cpu"])
    assert mismatches(api, shape(as_text, {}), request=True)
    more_values = obj({"cpu": {"type": "number"}, "kind": {"enum": ["a", "b", "c"]}}, ["cpu"])
    assert mismatches(api, shape(more_values, {}), request=True)
    optional = obj({"cpu": {"type": "number"}, "kind": {"enum": ["a", "b"]}})
    assert mismatches(api, shape(optional, {}), request=True)
    # Reading: a field the server stopped sending, or may leave out, is reported.
    client_reads = shape(obj({"cpu": {"type": "number"}, "gone": {"type": "string"}}), {})
    assert mismatches(client_reads, api, request=False) == [
        ": the client reads ['gone'], never sent"
    ]
