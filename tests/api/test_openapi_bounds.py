"""The OpenAPI document states this server's configured bounds, not the ceilings a site
may raise them to: change a setting and the document changes with it."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from api.app import create_app
from brain.config import Settings
from tests.builders import job_body

SITE = {
    "plausible_cpu": 96,
    "plausible_memory_mib": 65536,
    "plausible_gpu": 8,
    "plausible_steps_per_sec": 500,
    "plausible_nodes": 50,
    "min_timestamp": "2020-01-01T00:00:00Z",
    "max_batch_points": 500,
    "max_body_bytes": 2048,
}


def _property(document: dict, model: str, name: str) -> dict[str, Any]:
    """A property's own schema (the number branch of an optional one)."""
    schema = document["components"]["schemas"][model]["properties"][name]
    return next((s for s in schema.get("anyOf", []) if s.get("type") != "null"), schema)


def test_each_bound_that_is_a_setting_states_the_configured_value():
    default = create_app(Settings()).openapi()
    site = create_app(Settings(**SITE)).openapi()
    # (model, property): (the default maximum, this site's), worked out from the settings
    expected = {
        ("NodeIn", "cpu"): (1024, 96),
        ("NodePointIn", "memory_mib"): (16 * 1024 * 1024, 65536),
        ("RoleResources", "gpu"): (64, 8),
        ("RoleResources", "count"): (100_000, 50),
        ("SpeedPointIn", "steps_per_sec"): (1e6, 500),
        ("SpeedPointIn", "workers"): (100_000, 50),
        # a job's limits and the cluster's amounts: a node's bound x the node count
        ("Limits", "cpu"): (1024 * 100_000, 96 * 50),
        ("Limits", "memory_mib"): (16 * 1024 * 1024 * 100_000, 65536 * 50),
        ("ClusterStateIn", "free_gpu"): (64 * 100_000, 8 * 50),
    }
    for (model, name), (by_default, configured) in expected.items():
        assert _property(default, model, name)["maximum"] == by_default, (model, name)
        assert _property(site, model, name)["maximum"] == configured, (model, name)
    cpu = _property(site, "NodeIn", "cpu")["description"]
    assert cpu == "CPU cores. At most 96 on this server (BRAIN_PLAUSIBLE_CPU)."
    limits = _property(site, "Limits", "cpu")["description"]
    assert "At most 4,800 on this server" in limits
    ts = _property(site, "NodePointIn", "ts")["description"]
    assert "Not before 2020-01-01T00:00:00Z on this server (BRAIN_MIN_TIMESTAMP)" in ts
    assert (
        "Not before 2000-01-01T00:00:00Z" in _property(default, "NodePointIn", "ts")["description"]
    )
    samples = site["paths"]["/api/v1/jobs/{uid}/samples"]["post"]["responses"]["413"]
    assert "BRAIN_MAX_BATCH_POINTS is 500 on this server" in samples["description"]
    assert "BRAIN_MAX_BODY_BYTES (2,048 bytes" in site["info"]["description"]
    too_large = site["paths"]["/api/v1/jobs/{uid}"]["put"]["responses"]["413"]["description"]
    assert "2,048 bytes" in too_large


def test_what_the_document_states_is_what_the_server_refuses(pg_url, db):
    settings = Settings(database_url=pg_url, plausible_cpu=96)
    app = create_app(settings)
    largest = _property(app.openapi(), "RoleResources", "cpu")["maximum"]
    with TestClient(app) as client:
        at = client.put("/api/v1/jobs/j", json=job_body(roles={"ps": {"count": 1, "cpu": largest}}))
        assert at.status_code == 201
        above = {"ps": {"count": 1, "cpu": largest + 0.5}}
        refused = client.put("/api/v1/jobs/k", json=job_body(roles=above))
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "roles.ps.cpu"


def test_every_numeric_bound_uses_the_standard_keywords():
    """``ge`` and ``le`` are no JSON Schema keywords: clients and fuzzers ignore them."""
    found = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer") and {"ge", "gt", "le", "lt"} & set(node):
                found.append(path)
            for key, child in node.items():
                walk(child, f"{path}/{key}")
        elif isinstance(node, list):
            for i, child in enumerate(node):
                walk(child, f"{path}/{i}")

    walk(create_app(Settings()).openapi(), "")
    assert found == []
