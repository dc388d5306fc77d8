"""Sample ingestion: exact round trip, duplicates, retries, node creation, filters."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.builders import job_body, node_point


def _batch() -> dict:
    return {
        "nodes": [
            node_point("j-ps-0", "2026-03-01T00:00:00Z", 3.25, 4096.5),
            node_point("j-ps-0", "2026-03-01T00:00:15Z", 3.5, 4100.0),
            node_point(
                "j-worker-0",
                "2026-03-01T01:00:00+01:00",  # the same instant as 00:00:00Z
                1.125,
                2048.0,
                gpu_util=0.42,
                gpu_memory_mib=30000.0,
                gpu_memory_total_mib=81920.0,
                step_time_s=0.25,
            ),
        ],
        "speed": [
            {"ts": "2026-03-01T00:00:00Z", "global_step": 100, "steps_per_sec": 12.5, "workers": 4},
        ],
    }


def test_round_trip_returns_exact_values(client):
    client.put("/api/v1/jobs/j", json=job_body())
    assert client.post("/api/v1/jobs/j/samples", json=_batch()).json() == {
        "accepted": 4,
        "duplicates": 0,
    }
    series = client.get("/api/v1/jobs/j/samples").json()
    assert series["truncated"] is False
    assert series["nodes"] == [
        {
            "name": "j-ps-0",
            "role": "ps",
            "index": 0,
            "ts": "2026-03-01T00:00:00Z",
            "cpu": 3.25,
            "memory_mib": 4096.5,
            "gpu_util": None,
            "gpu_memory_mib": None,
            "gpu_memory_total_mib": None,
            "step_time_s": None,
        },
        {
            "name": "j-worker-0",
            "role": "worker",
            "index": 0,
            "ts": "2026-03-01T00:00:00Z",
            "cpu": 1.125,
            "memory_mib": 2048.0,
            "gpu_util": 0.42,
            "gpu_memory_mib": 30000.0,
            "gpu_memory_total_mib": 81920.0,
            "step_time_s": 0.25,
        },
        {
            "name": "j-ps-0",
            "role": "ps",
            "index": 0,
            "ts": "2026-03-01T00:00:15Z",
            "cpu": 3.5,
            "memory_mib": 4100.0,
            "gpu_util": None,
            "gpu_memory_mib": None,
            "gpu_memory_total_mib": None,
            "step_time_s": None,
        },
    ]
    assert series["speed"] == [
        {"ts": "2026-03-01T00:00:00Z", "global_step": 100, "steps_per_sec": 12.5, "workers": 4}
    ]


def test_retried_batch_stores_nothing_twice(client):
    client.put("/api/v1/jobs/j", json=job_body())
    client.post("/api/v1/jobs/j/samples", json=_batch())
    assert client.post("/api/v1/jobs/j/samples", json=_batch()).json() == {
        "accepted": 0,
        "duplicates": 4,
    }
    # A batch overlapping the stored one: only the new point is stored.
    overlap = {
        "nodes": _batch()["nodes"][:1] + [node_point("j-ps-0", "2026-03-01T00:00:30Z", 4, 1)]
    }
    assert client.post("/api/v1/jobs/j/samples", json=overlap).json() == {
        "accepted": 1,
        "duplicates": 1,
    }
    assert len(client.get("/api/v1/jobs/j/samples").json()["nodes"]) == 4


def test_repeated_point_within_one_batch_counts_as_duplicate(client):
    client.put("/api/v1/jobs/j", json=job_body())
    point = node_point("j-ps-0", "2026-03-01T00:00:00Z", 1, 1)
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": [point, point]}).json() == {
        "accepted": 1,
        "duplicates": 1,
    }


def test_concurrent_retries_store_each_point_once(client):
    client.put("/api/v1/jobs/j", json=job_body())
    batch = {
        "nodes": [node_point(f"j-worker-{i}", "2026-03-01T00:00:00Z", i, i) for i in range(40)]
    }
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: client.post("/api/v1/jobs/j/samples", json=batch), range(4))
        )
    assert all(r.status_code == 200 for r in results)
    assert sum(r.json()["accepted"] for r in results) == 40
    assert sum(r.json()["duplicates"] for r in results) == 120
    assert len(client.get("/api/v1/jobs/j/nodes").json()) == 40


def test_unknown_nodes_take_their_role_request(client):
    client.put("/api/v1/jobs/j", json=job_body())
    client.post("/api/v1/jobs/j/samples", json=_batch())
    nodes = {n["name"]: n for n in client.get("/api/v1/jobs/j/nodes").json()}
    assert set(nodes) == {"j-ps-0", "j-worker-0"}
    assert (nodes["j-ps-0"]["cpu"], nodes["j-ps-0"]["memory_mib"]) == (8.0, 16384.0)
    assert (nodes["j-worker-0"]["role"], nodes["j-worker-0"]["cpu"]) == ("worker", 4.0)


def test_registered_node_keeps_its_request(client):
    client.put("/api/v1/jobs/j", json=job_body())
    created = client.put(
        "/api/v1/jobs/j/nodes/j-ps-0", json={"role": "ps", "cpu": 12, "memory_mib": 1000}
    )
    assert created.status_code == 201
    client.post("/api/v1/jobs/j/samples", json=_batch())
    node = client.get("/api/v1/jobs/j/nodes").json()[0]
    assert (node["name"], node["cpu"], node["memory_mib"]) == ("j-ps-0", 12.0, 1000.0)
    assert (
        client.put("/api/v1/jobs/j/nodes/j-ps-0", json={"role": "ps", "cpu": 16}).status_code == 200
    )


def test_filters_by_node_role_and_window(client):
    client.put("/api/v1/jobs/j", json=job_body())
    client.post("/api/v1/jobs/j/samples", json=_batch())

    def names(params):
        return [
            (p["name"], p["ts"])
            for p in client.get("/api/v1/jobs/j/samples", params=params).json()["nodes"]
        ]

    assert names({"role": "worker"}) == [("j-worker-0", "2026-03-01T00:00:00Z")]
    assert names({"node": "j-ps-0", "start": "2026-03-01T00:00:10Z"}) == [
        ("j-ps-0", "2026-03-01T00:00:15Z")
    ]
    assert names({"end": "2026-03-01T00:00:15Z"}) == [
        ("j-ps-0", "2026-03-01T00:00:00Z"),
        ("j-worker-0", "2026-03-01T00:00:00Z"),
    ]
    limited = client.get("/api/v1/jobs/j/samples", params={"limit": 2}).json()
    assert limited["truncated"] is True
    assert len(limited["nodes"]) == 2
    naive = client.get("/api/v1/jobs/j/samples", params={"start": "2026-03-01T00:00:00"})
    assert naive.status_code == 422
    assert naive.json()["error"]["field"] == "start"


def test_sqlite_embedded_default_round_trip(sqlite_client):
    sqlite_client.put("/api/v1/jobs/j", json=job_body())
    assert sqlite_client.post("/api/v1/jobs/j/samples", json=_batch()).json() == {
        "accepted": 4,
        "duplicates": 0,
    }
    assert sqlite_client.post("/api/v1/jobs/j/samples", json=_batch()).json()["duplicates"] == 4
    series = sqlite_client.get("/api/v1/jobs/j/samples").json()
    assert [(p["name"], p["ts"], p["cpu"]) for p in series["nodes"]] == [
        ("j-ps-0", "2026-03-01T00:00:00Z", 3.25),
        ("j-worker-0", "2026-03-01T00:00:00Z", 1.125),
        ("j-ps-0", "2026-03-01T00:00:15Z", 3.5),
    ]
