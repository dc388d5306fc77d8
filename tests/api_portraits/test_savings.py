"""``GET /api/v1/savings`` and ``brain report savings`` on a small history worked out by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.db.models import ScalePlanRow
from brain.domain import RoleSpec
from brain.optimizing.proposal import PlanBody
from brain.summaries import summarize_job
from tests.builders import add_node, add_points, bearer, make_job, recent_hour, token_secret

approx = pytest.approx
WORKER = {"worker": RoleSpec(count=1, cpu=16, memory_mib=16384)}


def worker_job(session, uid, start, namespace, mem_mib, group="g"):
    """One worker asking 16 cores and 16 GiB for 1 h, using 1 core and ``mem_mib`` (one
    value per 5-minute sample from start to end, 13 samples)."""
    job = make_job(
        session,
        uid,
        start=start,
        hours=1.0,
        namespace=namespace,
        group_key=group,
        strategy="allreduce",
        roles=WORKER,
    )
    add_node(session, job, "worker-0", "worker", created_at=start, cpu=16, memory_mib=16384)
    points = [
        {"ts": start + timedelta(minutes=5 * i), "cpu": 1.0, "memory_mib": m}
        for i, m in enumerate(mem_mib)
    ]
    add_points(session, job, "worker-0", "worker", points)
    return job


@pytest.fixture
def history(session):
    start = recent_hour(3)
    # a1: the group's first run: the create stage keeps the ask (above startup's
    # 8 cores and 8192 MiB defaults): 16 GiB x 1 h, as requested.
    a1 = worker_job(session, "a1", start, "team-a", [1024.0] * 13)
    # a2, a day later, sized from a1 (peak 1024 MiB) by learned_margin: 1024 x (1.3 +
    # 1.0 / sqrt(1)) + 768 headroom = 3123.2 -> 3124 MiB; it never uses more.
    a2 = worker_job(session, "a2", start + timedelta(days=1), "team-a", [1024.0] * 13)
    # A plan applied to a2 half-way: 16 -> 8 cores, 16384 -> 8192 MiB for 0.5 h.
    half = start + timedelta(days=1, minutes=30)
    session.add(
        ScalePlanRow(
            job_id=a2.id,
            stage="running",
            status="applied",
            body=PlanBody(roles={"worker": RoleSpec(count=1, cpu=8, memory_mib=8192)}),
            created_at=half,
            updated_at=half,
            applied_at=half,
        )
    )
    b1 = worker_job(session, "b1", start, "team-b", [1024.0] * 13, group="h")
    for job in (a1, a2, b1):
        summarize_job(session, job)
    session.commit()


def test_savings_by_namespace_replay_brain_and_count_applied_plans(client, history):
    body = client.get("/api/v1/savings", params={"days": 30}).json()
    rows = {row["key"]: row for row in body["rows"]}
    assert set(rows) == {"team-a", "team-b"}
    a = rows["team-a"]
    assert (a["jobs"], a["replayed_jobs"]) == (2, 2)
    assert a["requested_gib_h"] == approx(32.0)
    assert a["used_gib_h"] == approx(2.0)
    assert a["brain_gib_h"] == approx(16.0 + 3124 / 1024)
    assert a["brain_ooms"] == 0 and a["brain_ooms_per_1000h"] == 0.0
    assert a["plans_applied"] == 1
    assert a["plans_saved_core_h"] == approx(8 * 0.5)
    assert a["plans_saved_gib_h"] == approx(8 * 0.5)
    assert body["total"]["jobs"] == 3
    assert body["total"]["requested_gib_h"] == approx(48.0)


def test_a_namespace_limited_token_sees_only_its_namespaces(settings, db, history):
    secret = token_secret(db, "a-only", "read", ["team-a"])
    other = token_secret(db, "admin", "admin")
    with TestClient(create_app(settings)) as secured:
        answer = secured.get("/api/v1/savings", headers=bearer(secret))
        assert answer.status_code == 200
        assert [row["key"] for row in answer.json()["rows"]] == ["team-a"]
        everything = secured.get("/api/v1/savings", headers=bearer(other))
        assert {row["key"] for row in everything.json()["rows"]} == {"team-a", "team-b"}


def test_savings_by_group_and_bad_input(client, history):
    body = client.get("/api/v1/savings", params={"by": "group"}).json()
    assert {row["key"] for row in body["rows"]} == {"g", "h"}
    bad = client.get("/api/v1/savings", params={"days": 0})
    assert bad.status_code == 422
    assert "days" in bad.text


def test_the_command_prints_the_same_report(settings, history, capsys, monkeypatch):
    from brain.cli import main

    monkeypatch.setenv("BRAIN_DATABASE_URL", settings.database_url)
    assert main(["report", "savings", "--days", "30", "--json", "--quiet"]) == 0
    body = __import__("json").loads(capsys.readouterr().out)
    assert body["total"]["brain_gib_h"] == approx(32.0 + 3124 / 1024)


def test_the_replay_reads_runs_and_series_from_the_database(settings, history, capsys, monkeypatch):
    from tests.commands import run_command

    monkeypatch.setenv("BRAIN_DATABASE_URL", settings.database_url)
    assert run_command("backtest", ["--replay", "--from-db", "--json", "--quiet"]) == 0
    body = __import__("json").loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in body["recommenders"]}
    # Three runs of 13 five-minute samples (13/12 h each) asking 16 GiB; Brain keeps
    # the ask for the first run of groups g and h and gives a2 3124 MiB.
    assert body["runs"] == 3 and body["workloads"] == 2
    assert rows["request"]["memory_gib_h"] == approx(3 * 16 * 13 / 12)
    assert rows["brain"]["memory_gib_h"] == approx((32 + 3124 / 1024) * 13 / 12)
    assert rows["brain"]["ooms"] == 0
    assert run_command("backtest", ["--replay", "--from-db", "--user", "x"]) == 2
    assert "takes --group but not --user" in capsys.readouterr().err
