"""A migrated node relaunched under a new name: the new node, first seen in samples, has
the size it was migrated to, and the migrated one no longer counts."""

from __future__ import annotations

from sqlalchemy import select

from brain.db.models import JobRow, ScalePlanRow
from brain.domain import PLAN_NOT_SERVED, Stage
from brain.services.optimizer_context import build_context
from tests.builders import hot_ps_job, node_point


def _nodes(client) -> dict[str, tuple[float, str]]:
    listed = client.get("/api/v1/jobs/j/nodes").json()
    return {n["name"]: (n["cpu"], n["status"]) for n in listed}


def test_the_replacement_of_a_migrated_ps_has_its_migrated_size(client):
    hot_ps_job(client, namespace="ml")
    plan = client.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": ["hot_ps"]}
    ).json()
    # hot_ps moves ps-0 to 6.4 cores (peak 3.8 / 0.6); the master applies it by starting
    # ps-2 (DLRover's next id) and stopping ps-0
    assert [(m["name"], m["cpu"]) for m in plan["migrate"]] == [("j-edljob-ps-0", 6.4)]
    reported = client.post(
        f"/api/v1/jobs/j/plans/{plan['id']}/status",
        json={"status": "applied", "applied_at": "2026-03-01T00:02:00Z"},
    )
    assert reported.status_code == 200, reported.text
    seen = [
        node_point("j-edljob-ps-2", "2026-03-01T00:03:00Z", 3.0, 9000),
        node_point("j-edljob-ps-1", "2026-03-01T00:03:00Z", 1.0, 9000),
    ]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": seen}).status_code == 200
    nodes = _nodes(client)
    # 2 PS declared and 2 running: a third is no scale-up, it is ps-0's replacement
    assert nodes["j-edljob-ps-2"] == (6.4, "running")
    assert nodes["j-edljob-ps-0"] == (6.4, "migrated")
    assert nodes["j-edljob-ps-1"] == (4.0, "running")


def test_a_node_the_roles_count_makes_room_for_is_a_new_node_of_its_size(client):
    hot_ps_job(client, namespace="ml")
    plan = client.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": ["hot_ps"]}
    ).json()
    client.post(f"/api/v1/jobs/j/plans/{plan['id']}/status", json={"status": "applied"})
    # the PS count raised to 3 before the pod appears: ps-2 is a new PS, ps-0 still runs
    roles = client.get("/api/v1/jobs/j").json()["roles"]
    roles["ps"]["count"] = 3
    body = {k: v for k, v in client.get("/api/v1/jobs/j").json().items()}
    updated = {
        "name": body["name"],
        "user": body["user"],
        "namespace": "ml",
        "status": "running",
        "roles": roles,
    }
    assert client.put("/api/v1/jobs/j", json=updated).status_code == 200
    seen = [node_point("j-edljob-ps-2", "2026-03-01T00:03:00Z", 3.0, 9000)]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": seen}).status_code == 200
    nodes = _nodes(client)
    assert nodes["j-edljob-ps-2"] == (4.0, "running")
    assert nodes["j-edljob-ps-0"] == (6.4, "running")


# hot_ps_job's samples of ps-0 and ps-1 end at 00:01:45; the silence setting is 300 s.


def _finished(client, name: str) -> str | None:
    listed = client.get("/api/v1/jobs/j/nodes").json()
    return next(n["finished_at"] for n in listed if n["name"] == name)


def _push(client, *points) -> None:
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": list(points)})
    assert response.status_code == 200, response.text


def test_a_learned_node_whose_samples_stopped_is_stopped_and_runs_again_when_heard(
    client, session, settings
):
    hot_ps_job(client, namespace="ml")
    # ps-1 at 00:06:45: ps-0's last sample is exactly 300 s older, not more: still running
    _push(client, node_point("j-edljob-ps-1", "2026-03-01T00:06:45Z", 1.0, 9000))
    assert _nodes(client)["j-edljob-ps-0"] == (4.0, "running")
    # at 00:07:00 it is 315 s older: stopped, from its last sample
    _push(client, node_point("j-edljob-ps-1", "2026-03-01T00:07:00Z", 1.0, 9000))
    nodes = _nodes(client)
    assert nodes["j-edljob-ps-0"] == (4.0, "stopped")
    assert nodes["j-edljob-ps-1"] == (4.0, "running")
    assert _finished(client, "j-edljob-ps-0").startswith("2026-03-01T00:01:45")
    # the optimizers' view of the job holds one running PS, and the stopped one among the
    # gone nodes (the sample window still holds its samples)
    job = session.scalar(select(JobRow).where(JobRow.uid == "j"))
    context = build_context(session, job, Stage.running, settings)
    assert [n.name for n in context.nodes_of("ps")] == ["j-edljob-ps-1"]
    assert [(n.name, n.role) for n in context.gone_nodes] == [("j-edljob-ps-0", "ps")]
    assert not context.failed_nodes
    session.rollback()
    # a sample of ps-0 again: it runs again
    _push(client, node_point("j-edljob-ps-0", "2026-03-01T00:07:15Z", 3.0, 9000))
    assert _nodes(client)["j-edljob-ps-0"] == (4.0, "running")
    assert _finished(client, "j-edljob-ps-0") is None


def test_a_node_its_master_registered_keeps_its_status_when_silent(client):
    hot_ps_job(client, namespace="ml")
    spec = {"role": "ps", "index": 0, "cpu": 4, "memory_mib": 16384, "status": "running"}
    assert client.put("/api/v1/jobs/j/nodes/j-edljob-ps-0", json=spec).status_code == 200
    _push(client, node_point("j-edljob-ps-1", "2026-03-01T00:07:00Z", 1.0, 9000))
    assert _nodes(client)["j-edljob-ps-0"] == (4.0, "running")


def _served_hot_ps_plan(client) -> dict:
    """hot_ps moves ps-0 to 6.4 cores; the plan is served and never reported, as a
    DLRover 0.6.1 master leaves it."""
    plan = client.post(
        "/api/v1/jobs/j/optimize", json={"stage": "running", "optimizers": ["hot_ps"]}
    ).json()
    assert plan["status"] == "proposed"
    assert [(m["name"], m["cpu"]) for m in plan["migrate"]] == [("j-edljob-ps-0", 6.4)]
    return plan


def test_the_replacement_of_a_ps_a_served_plan_migrated_has_its_migrated_size(client):
    hot_ps_job(client, namespace="ml")
    _served_hot_ps_plan(client)
    _push(
        client,
        node_point("j-edljob-ps-2", "2026-03-01T00:03:00Z", 3.0, 9000),
        node_point("j-edljob-ps-1", "2026-03-01T00:03:00Z", 1.0, 9000),
    )
    nodes = _nodes(client)
    # 2 PS declared and 2 running: ps-2 replaces ps-0, at the size the plan gave it
    # (ps-0 keeps its own: no applied plan wrote the new one on it)
    assert nodes["j-edljob-ps-2"] == (6.4, "running")
    assert nodes["j-edljob-ps-0"] == (4.0, "migrated")
    assert nodes["j-edljob-ps-1"] == (4.0, "running")


def test_a_migrated_ps_silent_before_its_new_pod_is_seen_is_still_replaced(client):
    hot_ps_job(client, namespace="ml")
    _served_hot_ps_plan(client)
    _push(client, node_point("j-edljob-ps-1", "2026-03-01T00:07:00Z", 1.0, 9000))
    assert _nodes(client)["j-edljob-ps-0"] == (4.0, "stopped")
    _push(client, node_point("j-edljob-ps-2", "2026-03-01T00:07:15Z", 3.0, 9000))
    nodes = _nodes(client)
    assert nodes["j-edljob-ps-2"] == (6.4, "running")
    assert nodes["j-edljob-ps-0"] == (4.0, "migrated")


def test_a_served_plan_pairs_nothing_for_a_master_that_reports_plan_statuses(client):
    hot_ps_job(client, namespace="ml")
    rejected = _served_hot_ps_plan(client)
    reported = client.post(
        f"/api/v1/jobs/j/plans/{rejected['id']}/status", json={"status": "rejected"}
    )
    assert reported.status_code == 200, reported.text
    _served_hot_ps_plan(client)
    _push(client, node_point("j-edljob-ps-2", "2026-03-01T00:03:00Z", 3.0, 9000))
    nodes = _nodes(client)
    assert nodes["j-edljob-ps-2"] == (4.0, "running")
    assert nodes["j-edljob-ps-0"] == (4.0, "running")


def test_a_plan_computed_too_late_for_the_master_pairs_nothing(client, session):
    hot_ps_job(client, namespace="ml")
    late = _served_hot_ps_plan(client)
    # the gRPC deadline passed: the master was answered with no plan, and migrated nothing
    session.get(ScalePlanRow, late["id"]).status_message = PLAN_NOT_SERVED
    session.commit()
    _push(client, node_point("j-edljob-ps-2", "2026-03-01T00:03:00Z", 3.0, 9000))
    nodes = _nodes(client)
    assert nodes["j-edljob-ps-2"] == (4.0, "running")
    assert nodes["j-edljob-ps-0"] == (4.0, "running")
