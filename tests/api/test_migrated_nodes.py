"""A migrated node relaunched under a new name: the new node, first seen in samples, has
the size it was migrated to, and the migrated one no longer counts."""

from __future__ import annotations

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
