"""ScalePlans through the API on PostgreSQL: optimize, read, watch, report, render."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.builders import hot_ps_job, job_body

# DLRover's ScalePlan CRD (Apache-2.0; provenance in tests/fixtures/README.md).
CRD = Path(__file__).resolve().parents[1] / "fixtures" / "scaleplan-crd.yaml"


def _optimize(client, **body):
    return client.post("/api/v1/jobs/j/optimize", json={"stage": "running", **body})


def test_optimizers_are_listed_with_settings_schema(client):
    listed = {o["name"]: o for o in client.get("/api/v1/optimizers").json()}
    assert {
        "startup",
        "oom_recovery",
        "estimate",
        "hot_ps",
        "oom_risk",
        "worker_tuning",
        "gpu_cpu",
    } <= set(listed)
    hot = listed["hot_ps"]
    assert hot["stages"] == ["running"]
    assert hot["defaults"]["hot_threshold"] == 0.8
    assert hot["settings_schema"]["properties"]["hot_threshold"]["maximum"] == 1.0
    assert "hot" in hot["description"].lower()
    # what runs by default, in which order, and what each may change
    assert hot["default_order"] == {"running": 10}
    assert hot["changes"] == {"groups": [], "nodes": ["ps"]}
    assert listed["worker_tuning"]["changes"] == {"groups": ["worker"], "nodes": []}
    assert listed["memory_release"]["default_order"] == {}


def test_hot_ps_plan_round_trip(client):
    hot_ps_job(client, namespace="ml")
    response = _optimize(client, optimizers=["hot_ps"])
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["status"] == "proposed" and plan["stage"] == "running"
    # Peak 3.8 / target utilization 0.6 = 6.33 -> 6.4 cores (0.1-core steps); ps-1 untouched.
    assert plan["migrate"] == [
        {"name": "j-edljob-ps-0", "role": "ps", "cpu": 6.4, "memory_mib": 16384.0, "gpu": None}
    ]
    assert plan["optimizers"] == ["hot_ps"]
    assert plan["reasons"][0]["optimizer"] == "hot_ps"
    assert plan["reasons"][0]["threshold"]["hot_threshold"] == 0.8
    assert client.get(f"/api/v1/jobs/j/plans/{plan['id']}").json() == plan
    assert [p["id"] for p in client.get("/api/v1/jobs/j/plans").json()] == [plan["id"]]


def test_an_empty_plan_does_not_supersede_a_pending_one(client):
    hot_ps_job(client, namespace="ml")
    pending = _optimize(client, optimizers=["hot_ps"]).json()
    # At 0.95 nothing is hot: an empty plan, which leaves the pending migration alone.
    empty = _optimize(
        client, optimizers=["hot_ps"], settings={"hot_ps": {"hot_threshold": 0.95}}
    ).json()
    assert empty["migrate"] == []
    assert client.get(f"/api/v1/jobs/j/plans/{pending['id']}").json()["status"] == "proposed"
    # Nothing to apply: stored for its reasons as no_change, not proposed, and a training
    # agent walking the plans is not woken for it.
    assert empty["status"] == "no_change"
    walk = client.get("/api/v1/jobs/j/plans/latest", params={"after": pending["id"]})
    assert walk.status_code == 204
    refused = client.post(f"/api/v1/jobs/j/plans/{empty['id']}/status", json={"status": "applied"})
    assert refused.status_code == 409 and refused.json()["error"]["field"] == "status"
    newer = _optimize(client, optimizers=["hot_ps"]).json()
    assert client.get(f"/api/v1/jobs/j/plans/{pending['id']}").json()["status"] == "superseded"
    assert client.get(f"/api/v1/jobs/j/plans/{newer['id']}").json()["status"] == "proposed"


def test_per_request_settings_override(client):
    hot_ps_job(client, namespace="ml")
    # At 0.95 only 3.8 / 4 = 0.95 qualifies, not 3.6 and 3.7: nothing is hot.
    plan = _optimize(client, optimizers=["hot_ps"], settings={"hot_ps": {"hot_threshold": 0.95}})
    assert plan.status_code == 200
    assert plan.json()["migrate"] == []
    assert plan.json()["reasons"][0]["threshold"]["hot_threshold"] == 0.95


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"optimizers": ["hot_ps"], "settings": {"hot_ps": {"hot_threshold": 2}}},
            "settings.hot_ps.hot_threshold",
        ),
        ({"optimizers": ["hot_ps"], "settings": {"hot_ps": {"heat": 1}}}, "settings.hot_ps.heat"),
        ({"optimizers": ["hot_ps"], "settings": {"oom_risk": {}}}, "settings.oom_risk"),
        ({"optimizers": ["no_such"]}, "optimizers.0"),
        ({"optimizers": ["hot_ps", "startup"]}, "optimizers.1"),
        ({"stage": "sometime"}, "stage"),
    ],
)
def test_bad_optimize_requests_are_rejected_and_store_nothing(client, body, field):
    hot_ps_job(client, namespace="ml")
    response = _optimize(client, **body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == field
    assert client.get("/api/v1/jobs/j/plans").json() == []


def test_newer_plan_supersedes_and_status_reports(client):
    hot_ps_job(client, namespace="ml")
    first = _optimize(client, optimizers=["hot_ps"]).json()
    second = _optimize(client, optimizers=["hot_ps"]).json()
    assert client.get(f"/api/v1/jobs/j/plans/{first['id']}").json()["status"] == "superseded"

    url = f"/api/v1/jobs/j/plans/{second['id']}/status"
    applied = client.post(url, json={"status": "applied", "message": "relaunched ps-0"})
    assert applied.json()["status"] == "applied"
    assert applied.json()["status_message"] == "relaunched ps-0"
    assert client.post(url, json={"status": "applied"}).status_code == 200  # a retry
    conflict = client.post(url, json={"status": "rejected"})
    assert conflict.status_code == 409
    assert conflict.json()["error"]["field"] == "status"
    assert client.post(url, json={"status": "failed", "message": "OOM again"}).status_code == 200
    missing = client.post("/api/v1/jobs/j/plans/999/status", json={"status": "applied"})
    assert missing.status_code == 404


def test_oom_event_is_answered_once(client):
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    client.put(
        "/api/v1/jobs/j/nodes/j-edljob-worker-0",
        json={"role": "worker", "cpu": 4, "memory_mib": 8192},
    )
    oom = [{"ts": "2026-03-01T00:10:00Z", "kind": "oom", "node": "j-edljob-worker-0"}]
    client.post("/api/v1/jobs/j/events", json=oom)
    body = {"stage": "oom", "node": "j-edljob-worker-0"}
    first = client.post("/api/v1/jobs/j/optimize", json=body).json()
    # No sample before the kill: x3 of the 8192 MiB request.
    assert [(m["name"], m["memory_mib"]) for m in first["migrate"]] == [
        ("j-edljob-worker-0", 24576.0)
    ]
    replay = client.post("/api/v1/jobs/j/optimize", json=body).json()
    assert replay["id"] == first["id"]
    assert replay["status"] == "proposed"
    assert len(client.get("/api/v1/jobs/j/plans").json()) == 1

    # A second OOM of the same node after the first plan was applied: grow again, x3.
    client.post(f"/api/v1/jobs/j/plans/{first['id']}/status", json={"status": "applied"})
    client.put(
        "/api/v1/jobs/j/nodes/j-edljob-worker-0",
        json={"role": "worker", "cpu": 4, "memory_mib": 16384},
    )
    oom[0]["ts"] = "2026-03-01T00:20:00Z"
    client.post("/api/v1/jobs/j/events", json=oom)
    second = client.post("/api/v1/jobs/j/optimize", json=body).json()
    assert second["id"] != first["id"]
    assert second["migrate"][0]["memory_mib"] == 49152.0

    missing_node = client.post("/api/v1/jobs/j/optimize", json={"stage": "oom"})
    assert missing_node.status_code == 422
    assert missing_node.json()["error"]["field"] == "node"


def test_oom_stage_without_a_recorded_oom_is_refused_and_stores_nothing(client):
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    client.put(
        "/api/v1/jobs/j/nodes/j-edljob-worker-0",
        json={"role": "worker", "cpu": 4, "memory_mib": 8192},
    )
    # An OOM of another node does not count for this one.
    other = [{"ts": "2026-03-01T00:10:00Z", "kind": "oom", "node": "j-edljob-worker-1"}]
    client.post("/api/v1/jobs/j/events", json=other)
    for node in ("j-edljob-worker-0", "no-such-node"):
        response = client.post("/api/v1/jobs/j/optimize", json={"stage": "oom", "node": node})
        assert response.status_code == 409
        error = response.json()["error"]
        assert (error["code"], error["field"]) == ("conflict", "node")
        assert error["message"].startswith(f"no OOM recorded for node '{node}' of job 'j'")
    assert client.get("/api/v1/jobs/j/plans").json() == []
    documented = client.get("/openapi.json").json()["paths"]["/api/v1/jobs/{uid}/optimize"]
    assert "no OOM recorded" in documented["post"]["responses"]["409"]["description"]


UNSIZED_ROLES = {"ps": {"count": 1}, "worker": {"count": 2}}


def test_create_without_history_gives_the_defaults_to_unsized_roles(client):
    body = job_body(user="nobody", dataset="nothing", roles=UNSIZED_ROLES)
    client.put("/api/v1/jobs/new", json=body)
    plan = client.post("/api/v1/jobs/new/optimize", json={"stage": "create"}).json()
    assert plan["roles"]["ps"]["count"] == 1
    assert (plan["roles"]["ps"]["cpu"], plan["roles"]["ps"]["memory_mib"]) == (8.0, 8192.0)
    # The job has no chief: no `chief: count 0` in its plan; its workers get the chief's
    # sizing (a DLRover master makes one of them the chief).
    assert set(plan["roles"]) == {"ps", "worker"}
    assert plan["roles"]["worker"] == {
        "count": 2,
        "cpu": 8.0,
        "memory_mib": 8192.0,
        "gpu": 0.0,
        "cpu_limit": None,
    }
    assert any("no related job" in r["message"] for r in plan["reasons"])


def test_long_poll_returns_a_new_plan_or_204(client):
    hot_ps_job(client, namespace="ml")
    started = time.monotonic()
    empty = client.get("/api/v1/jobs/j/plans/latest", params={"after": 0, "wait": 0.4})
    assert empty.status_code == 204
    assert time.monotonic() - started >= 0.4

    timer = threading.Timer(0.3, lambda: _optimize(client, optimizers=["hot_ps"]))
    timer.start()
    try:
        waited = client.get("/api/v1/jobs/j/plans/latest", params={"after": 0, "wait": 10})
    finally:
        timer.join()
    assert waited.status_code == 200
    assert waited.json()["migrate"][0]["name"] == "j-edljob-ps-0"
    after = client.get("/api/v1/jobs/j/plans/latest", params={"after": waited.json()["id"]})
    assert after.status_code == 204
    assert client.get("/api/v1/jobs/nope/plans/latest").status_code == 404


def test_k8s_rendering_is_a_valid_scaleplan(client):
    hot_ps_job(client, namespace="ml")
    estimate = {"stage": "running", "optimizers": ["hot_ps"]}
    plan = client.post("/api/v1/jobs/j/optimize", json=estimate).json()
    response = client.get(f"/api/v1/jobs/j/plans/{plan['id']}", params={"format": "k8s"})
    assert response.headers["content-type"].startswith("application/yaml")
    manifest = yaml.safe_load(response.text)

    crd = yaml.safe_load(CRD.read_text())
    version = crd["spec"]["versions"][0]
    spec_schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    jsonschema.validate(manifest["spec"], spec_schema)
    assert manifest["apiVersion"] == f"{crd['spec']['group']}/{version['name']}"
    assert manifest["kind"] == crd["spec"]["names"]["kind"]
    assert manifest["metadata"] == {
        "name": f"ctr-train-scaleplan-{plan['id']}",
        "labels": {"elasticjob-name": "ctr-train", "scale-type": "auto"},
        "namespace": "ml",
    }
    assert manifest["spec"]["ownerJob"] == "ctr-train"
    assert manifest["spec"]["migratePods"] == [
        {
            "type": "ps",
            "name": "j-edljob-ps-0",
            "rankIndex": 0,
            "resource": {"cpu": "6400m", "memory": "16384Mi"},
        }
    ]
    # ps-0 is migrated: DLRover relaunches it as the next id (2) in its rank; ps-1 stays.
    hosts = ["j-edljob-ps-2.ml.svc:2222", "j-edljob-ps-1.ml.svc:2222"]
    assert manifest["spec"]["psHosts"] == hosts
    assert plan["ps_hosts"] == hosts


def test_k8s_rendering_of_roles_validates(client):
    client.put("/api/v1/jobs/new", json=job_body(user="nobody", roles=UNSIZED_ROLES))
    plan = client.post(
        "/api/v1/jobs/new/optimize", json={"stage": "create", "optimizers": ["startup"]}
    ).json()
    text = client.get(f"/api/v1/jobs/new/plans/{plan['id']}?format=k8s").text
    manifest = yaml.safe_load(text)
    crd = yaml.safe_load(CRD.read_text())
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    jsonschema.validate(manifest["spec"], spec_schema)
    assert manifest["spec"]["replicaResourceSpecs"]["ps"] == {
        "replicas": 1,
        "resource": {"cpu": "8", "memory": "8192Mi"},
    }
    # No PS runs yet: the one planned PS gets DLRover's first name, in the default namespace.
    assert manifest["spec"]["psHosts"] == ["ctr-train-edljob-ps-0.default.svc:2222"]
