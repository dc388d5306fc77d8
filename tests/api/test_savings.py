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
    assert body["roles_counted"].startswith("each job's main role only")
    # The table says so too, above its numbers.
    assert main(["report", "savings", "--days", "30", "--quiet"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].startswith("Hours are of each job's main role only (the role holding most")
    # --store keeps the replays with the summaries first; the report reads the same.
    assert main(["report", "savings", "--days", "30", "--json", "--store"]) == 0
    captured = capsys.readouterr()
    assert "stored the replay of 3 jobs" in captured.err
    assert __import__("json").loads(captured.out)["total"] == body["total"]


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


def _report(session, settings, by="namespace"):
    from brain.optimizing import load_registry
    from brain.savings.report import savings

    since = recent_hour(30)
    return savings(session, load_registry(), settings, since, by=by)


def _stored_count(session) -> int:
    from sqlalchemy import func, select

    from brain.db.models import JobSummaryRow

    query = select(func.count()).where(JobSummaryRow.savings_computed_at.is_not(None))
    return session.scalar(query)


def test_the_stored_replay_and_a_fresh_one_give_the_same_report(settings, session, history):
    from brain.optimizing import load_registry
    from brain.savings.stored import store_savings

    fresh = _report(session, settings)
    fresh_by_group = _report(session, settings, by="group")
    assert _stored_count(session) == 0
    # Whole groups per pass: at most 1 job asked, group g's two runs are stored together.
    assert store_savings(session, load_registry(), settings, limit=1) == 2
    assert store_savings(session, load_registry(), settings, limit=1) == 1  # group h
    session.commit()
    assert _stored_count(session) == 3
    assert store_savings(session, load_registry(), settings) == 0  # nothing left to replay
    stored = _report(session, settings)
    assert [r.as_dict() for r in stored.rows] == [r.as_dict() for r in fresh.rows]
    assert stored.total.as_dict() == fresh.total.as_dict()
    assert stored.total.brain_gib_h == approx(32.0 + 3124 / 1024)
    by_group = _report(session, settings, by="group")
    assert [r.as_dict() for r in by_group.rows] == [r.as_dict() for r in fresh_by_group.rows]


def test_a_stored_replay_counts_its_oom_kills(settings, session):
    from brain.optimizing import load_registry
    from brain.savings.stored import store_savings

    # The group's first run keeps its ask, 16384 MiB; sample 6 jumps to 20000 MiB, past
    # it with no trend to warn oom_risk: one OOM kill in the replay.
    start = recent_hour(2)
    job = worker_job(session, "k1", start, "team-k", [100.0] * 6 + [20000.0] + [100.0] * 6)
    summarize_job(session, job)
    session.commit()
    fresh = _report(session, settings).total
    assert (fresh.brain_ooms, fresh.brain_jobs_with_oom, fresh.replayed_jobs) == (1, 1, 1)
    store_savings(session, load_registry(), settings)
    session.commit()
    assert _report(session, settings).total.as_dict() == fresh.as_dict()


def test_money_where_prices_are_set(settings, session, history):
    # $0.05 a core-hour, $0.01 a GiB-hour, no GPU price. team-a: 32 core-hours and
    # 32 GiB-hours requested = $1.92; used 2 and 2 = $0.12; Brain's hours at the same
    # prices; the plan saved 4 core-hours and 4 GiB-hours = $0.24.
    priced = settings.model_copy(update={"price_core_hour_usd": 0.05, "price_gib_hour_usd": 0.01})
    rows = {r.key: r for r in _report(session, priced).rows}
    a = rows["team-a"]
    assert a.requested_usd == approx(32 * 0.05 + 32 * 0.01)
    assert a.used_usd == approx(2 * 0.05 + 2 * 0.01)
    assert a.brain_usd == approx(a.brain_core_h * 0.05 + a.brain_gib_h * 0.01)
    assert a.plans_saved_usd == approx(4 * 0.05 + 4 * 0.01)
    # No price set: the default table, $0.031611 a core-hour and $0.004237 a GiB-hour.
    default = {r.key: r for r in _report(session, settings).rows}["team-a"]
    assert default.requested_usd == approx(32 * 0.031611 + 32 * 0.004237)  # $1.147136
    assert default.plans_saved_usd == approx(4 * 0.031611 + 4 * 0.004237)
    off = settings.model_copy(update={"price_defaults": False})
    unpriced = _report(session, off).total
    assert (unpriced.requested_usd, unpriced.brain_usd, unpriced.plans_saved_usd) == (
        None,
        None,
        None,
    )


def test_every_roles_hours_are_given_beside_the_main_roles_as_the_console_counts(client, session):
    # One PS and one worker, each asking 4 cores for 2 h: 8 core-hours each, 16 in all.
    # The worker asks 8 GiB (16 GiB-hours), the PS 4 GiB (8): the worker is the main role.
    # Used, from 25 samples over the 2 h: PS 1 core and 1 GiB, worker 2 cores and 2 GiB,
    # so 2 + 4 = 6 core-hours and 2 + 4 = 6 GiB-hours.
    start = recent_hour(3)
    roles = {
        "ps": RoleSpec(count=1, cpu=4, memory_mib=4096),
        "worker": RoleSpec(count=1, cpu=4, memory_mib=8192),
    }
    job = make_job(session, "two", start=start, hours=2.0, namespace="ml", roles=roles)
    for role, memory_mib, cpu_used in (("ps", 4096, 1.0), ("worker", 8192, 2.0)):
        add_node(session, job, f"{role}-0", role, created_at=start, cpu=4, memory_mib=memory_mib)
        points = [
            {"ts": start + timedelta(minutes=5 * i), "cpu": cpu_used, "memory_mib": 1024 * cpu_used}
            for i in range(25)
        ]
        add_points(session, job, f"{role}-0", role, points)
    summarize_job(session, job)
    session.commit()

    [row] = client.get("/api/v1/savings").json()["rows"]
    assert (row["requested_core_h"], row["used_core_h"]) == (approx(8.0), approx(4.0))
    assert (row["all_roles_requested_core_h"], row["all_roles_used_core_h"]) == (
        approx(16.0),
        approx(6.0),
    )
    assert (row["all_roles_requested_gib_h"], row["all_roles_used_gib_h"]) == (
        approx(24.0),
        approx(6.0),
    )
    # The console's (the portrait's) hours of the same job are the every-role ones.
    cpu = client.get("/api/v1/portraits/jobs/two").json()["summary"]["hours"]["cpu"]
    assert cpu["requested_core_hours"] == approx(row["all_roles_requested_core_h"])
    assert cpu["used_core_hours"] == approx(row["all_roles_used_core_h"])
    # At the default prices: 16 x 0.031611 + 24 x 0.004237 = 0.505776 + 0.101688.
    assert row["all_roles_requested_usd"] == approx(0.607464)
