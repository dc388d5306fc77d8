"""Every list of the API answers ?format=csv: a header row even with no row, a nested
object's fields as `outer.inner` columns, lists as JSON cells, times in RFC 3339 UTC."""

from __future__ import annotations

import csv
import io

import pytest

from brain.summaries import summarize_job
from tests.builders import bearer, flat_job, job_body, recent_hour

approx = pytest.approx


def csv_of(response) -> tuple[list[str], list[dict[str, str]]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    reader = csv.DictReader(io.StringIO(response.text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def test_events_and_nodes_of_a_job_as_csv_header_first_even_when_empty(client):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    header, rows = csv_of(client.get("/api/v1/jobs/j/events", params={"format": "csv"}))
    assert (header, rows) == (["id", "ts", "kind", "node", "detail"], [])
    nodes_header, none = csv_of(client.get("/api/v1/jobs/j/nodes", params={"format": "csv"}))
    assert none == [] and nodes_header[:6] == ["name", "role", "index", "cpu", "memory_mib", "gpu"]

    node = {"role": "ps", "index": 0, "cpu": 4, "memory_mib": 8192}
    assert client.put("/api/v1/jobs/j/nodes/j-ps-0", json=node).status_code == 201
    _, [row] = csv_of(client.get("/api/v1/jobs/j/nodes", params={"format": "csv"}))
    assert (row["name"], row["role"], row["index"], row["cpu"], row["memory_mib"]) == (
        "j-ps-0",
        "ps",
        "0",
        "4.0",
        "8192.0",
    )

    events = [
        {"ts": "2026-11-02T10:00:00Z", "kind": "oom", "node": "j-ps-0", "detail": "137"},
        {"ts": "2026-11-02T10:05:00Z", "kind": "relaunched"},
    ]
    assert client.post("/api/v1/jobs/j/events", json=events).status_code == 200
    _, rows = csv_of(client.get("/api/v1/jobs/j/events", params={"format": "csv"}))
    listed = client.get("/api/v1/jobs/j/events").json()
    assert [r["id"] for r in rows] == [str(e["id"]) for e in listed]
    assert [(r["ts"], r["kind"], r["node"], r["detail"]) for r in rows] == [
        ("2026-11-02T10:00:00Z", "oom", "j-ps-0", "137"),
        ("2026-11-02T10:05:00Z", "relaunched", "", ""),
    ]


def test_plans_and_optimizers_as_csv_with_lists_as_json_cells(client):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    header, none = csv_of(client.get("/api/v1/jobs/j/plans", params={"format": "csv"}))
    assert none == [] and {"id", "job_uid", "stage", "status", "created_at"} <= set(header)
    plan = client.post("/api/v1/jobs/j/optimize", json={"stage": "create"}).json()
    _, [row] = csv_of(client.get("/api/v1/jobs/j/plans", params={"format": "csv"}))
    assert (row["id"], row["job_uid"], row["stage"], row["status"]) == (
        str(plan["id"]),
        "j",
        "create",
        plan["status"],
    )
    optimizers = client.get("/api/v1/optimizers").json()
    header, rows = csv_of(client.get("/api/v1/optimizers", params={"format": "csv"}))
    assert header[:2] == ["name", "stages"]
    assert [r["name"] for r in rows] == [o["name"] for o in optimizers]
    # A list is one JSON cell: ["create"] and the like.
    assert [r["stages"] for r in rows] == [
        str(o["stages"]).replace("'", '"').replace(", ", ",") for o in optimizers
    ]


def test_ranking_priorities_and_savings_as_csv_totals_as_columns(client, session):
    empty_header, none = csv_of(client.get("/api/v1/portraits", params={"format": "csv"}))
    assert none == [] and empty_header[:3] == ["key", "totals.jobs", "totals.finished"]
    assert "totals.hours.cpu.requested_core_hours" in empty_header

    # bob-1: one node asking 8 cores and 1 GiB for an hour, using 2 cores and 0.5 GiB.
    t0 = recent_hour()
    job = flat_job(session, "bob-1", start=t0, cpu_request=8, cpu_used=2, user="bob")
    summarize_job(session, job)
    session.commit()
    _, [bob] = csv_of(client.get("/api/v1/portraits", params={"format": "csv"}))
    assert bob["key"] == "bob" and bob["totals.jobs"] == "1"
    assert float(bob["totals.hours.cpu.requested_core_hours"]) == approx(8)
    assert float(bob["totals.hours.cpu.waste_core_hours"]) == approx(6)
    assert float(bob["totals.hours.memory.requested_gib_hours"]) == approx(1)
    # At the default prices: 8 x 0.031611 + 1 x 0.004237 = $0.257125.
    assert float(bob["totals.cost.requested_usd"]) == approx(0.257125)

    _, [owner] = csv_of(client.get("/api/v1/priorities", params={"format": "csv"}))
    assert owner["key"] == "bob" and float(owner["totals.hours.cpu.used_core_hours"]) == approx(2)

    _, rows = csv_of(client.get("/api/v1/savings", params={"format": "csv"}))
    assert [r["key"] for r in rows] == ["-", "total"]  # no namespace, then the total
    assert float(rows[-1]["requested_core_h"]) == approx(8)


def test_a_paged_list_names_the_next_offset_in_a_header(client, session):
    t0 = recent_hour()
    for user in ("ann", "bea"):
        summarize_job(
            session, flat_job(session, f"{user}-1", start=t0, cpu_request=2, cpu_used=1, user=user)
        )
    session.commit()
    first = client.get("/api/v1/portraits", params={"format": "csv", "top": 1})
    assert first.headers["x-next-offset"] == "1" and len(csv_of(first)[1]) == 1
    last = client.get("/api/v1/portraits", params={"format": "csv", "top": 1, "offset": 1})
    assert "x-next-offset" not in last.headers and len(csv_of(last)[1]) == 1


def test_tokens_and_a_suggestions_roles_as_csv(secured, tokens):
    admin = bearer(tokens["admin"])
    _, rows = csv_of(secured.get("/api/v1/tokens", params={"format": "csv"}, headers=admin))
    assert sorted(r["name"] for r in rows) == ["admin-token", "read-token", "write-token"]
    assert "secret" not in rows[0] and rows[0]["namespaces"] == ""
    write = bearer(tokens["write"])
    assert secured.put("/api/v1/jobs/j", json=job_body(), headers=write).status_code == 201
    asked = {"user": "alice", "name": "ctr-train", "format": "csv"}
    header, roles = csv_of(secured.get("/api/v1/suggestions", params=asked, headers=admin))
    assert header[:3] == ["role", "count", "cpu_request"]
    as_json = secured.get("/api/v1/suggestions", params={**asked, "format": "json"}, headers=admin)
    assert [r["role"] for r in roles] == [r["role"] for r in as_json.json()["roles"]]


def test_every_list_says_it_speaks_csv_in_openapi(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/api/v1/jobs",
        "/api/v1/jobs/{uid}/events",
        "/api/v1/jobs/{uid}/plans",
        "/api/v1/jobs/{uid}/nodes",
        "/api/v1/optimizers",
        "/api/v1/portraits",
        "/api/v1/portraits/jobs/{uid}/nodes",
        "/api/v1/priorities",
        "/api/v1/savings",
        "/api/v1/suggestions",
        "/api/v1/tokens",
    ):
        get = paths[path]["get"]
        assert "text/csv" in get["responses"]["200"]["content"], path
        [fmt] = [p for p in get["parameters"] if p["name"] == "format"]
        assert "csv" in fmt["description"], path
