"""Portraits on /metrics: names, labels and values against the API's portraits; one
scrape shows what every worker stored; the user and group series stay bounded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import insert
from sqlalchemy.orm import Session

from api.app import create_app
from brain.db.models import JobRow, JobSummaryRow
from brain.domain import utcnow
from brain.summaries.usage_days import write_usage_days
from tests.builders import flat_job, recent_hour

approx = pytest.approx


def scrape(client) -> dict[str, dict[tuple, float]]:
    """metric name -> {sorted label pairs: value}."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def one(metrics, name: str, **labels) -> float:
    return metrics[name][tuple(sorted(labels.items()))]


@pytest.fixture
def fresh(settings):
    """An app whose portrait metrics are read anew at every scrape."""
    with TestClient(create_app(settings.model_copy(update={"metrics_cache_s": 0}))) as client:
        yield client


def test_user_and_group_series_equal_the_api_portraits(fresh, history):
    metrics = scrape(fresh)
    for kind, key, namespace, path in (
        ("user", "alice", "ml", "/api/v1/portraits/users/alice"),
        ("user", "bob", "ads", "/api/v1/portraits/users/bob"),
        ("group", "alice/bert", "ml", "/api/v1/portraits/groups/alice/bert"),
    ):
        asked = {"days": 7, "namespace": namespace}
        totals = fresh.get(path, params=asked).json()["totals"]
        hours = totals["hours"]
        label = {kind: key, "namespace": namespace}
        assert one(metrics, f"brain_{kind}_jobs", **label) == totals["jobs"]
        assert one(metrics, f"brain_{kind}_oom_kills", **label) == totals["oom_count"]
        for resource, unit, field in (
            ("cpu", "core_hours", "core_hours"),
            ("memory", "memory_gib_hours", "gib_hours"),
            ("gpu", "gpu_hours", "gpu_hours"),
        ):
            for what in ("requested", "used", "waste"):
                value = one(metrics, f"brain_{kind}_{what}_{unit}", **label)
                assert value == approx(hours[resource][f"{what}_{field}"]), (key, what, unit)
            efficiency = hours[resource]["efficiency"]
            got = metrics[f"brain_{kind}_efficiency"].get(
                tuple(sorted({**label, "resource": resource}.items()))
            )
            assert got == (None if efficiency is None else approx(efficiency))
        score = one(metrics, f"brain_{kind}_efficiency", **label, resource="score")
        assert score == approx(hours["efficiency_score"])
    # By hand: bob-1 asked 8 cores for 1 h and used 2.
    assert one(metrics, "brain_user_waste_core_hours", user="bob", namespace="ads") == approx(6)


def test_namespace_series_add_up_the_job_portraits(fresh, history):
    metrics = scrape(fresh)
    ml = [
        fresh.get(f"/api/v1/portraits/jobs/{uid}").json()["summary"]
        for uid in ("hand-1", "flat-a", "flat-b")
    ]
    assert one(metrics, "brain_namespace_jobs", namespace="ml") == 3
    assert one(metrics, "brain_namespace_waste_gpu_hours", namespace="ml") == approx(
        sum(s["hours"]["gpu"]["waste_gpu_hours"] for s in ml)
    )
    assert one(metrics, "brain_namespace_oom_kills", namespace="ml") == 1  # hand-1's worker-1
    assert one(metrics, "brain_namespace_requested_core_hours", namespace="ads") == approx(8)
    # hand-1's applied plan, by the optimizer that made it.
    assert one(metrics, "brain_plans", optimizer="worker_tuning", status="applied") == 1
    assert one(metrics, "brain_portrait_window_days") == 7
    assert one(metrics, "brain_portrait_metrics_up") == 1


def test_one_scrape_shows_what_another_worker_stored(settings, fresh, session):
    """Two apps on one database stand for two worker processes: what one stored shows on
    the other's /metrics (counted in the database, not in the process)."""
    with TestClient(create_app(settings.model_copy(update={"metrics_cache_s": 0}))) as other:
        assert "brain_namespace_jobs" not in scrape(other)
        job = flat_job(
            session, "elsewhere", start=recent_hour(), cpu_request=2, cpu_used=1, namespace="ads"
        )
        from brain.summaries import summarize_job

        summarize_job(session, job)
        session.commit()
        assert one(scrape(other), "brain_namespace_jobs", namespace="ads") == 1
        assert one(scrape(fresh), "brain_namespace_jobs", namespace="ads") == 1


def test_user_series_stay_bounded_with_ten_thousand_users(settings, db):
    """10,000 users, one job each wasting as many core-hours as its number: 50 users get
    series of their own (the 50 wasting most) and one (other) carries the rest."""
    now = utcnow()
    ended = now - timedelta(days=1)
    users = 10_000
    with db.begin() as conn:
        conn.execute(
            insert(JobRow),
            [
                {
                    "id": i + 1,
                    "uid": f"j{i}",
                    "name": "n",
                    "user_name": f"u{i:05d}",
                    "group_key": f"u{i:05d}/n",
                    "strategy": "ps",
                    "status": "succeeded",
                    "roles": {},
                    "created_at": ended,
                    "updated_at": ended,
                }
                for i in range(users)
            ],
        )
    summaries = [
        {
            "job_id": i + 1,
            "final": True,
            "computed_at": now,
            "uid": f"j{i}",
            "name": "n",
            "user": f"u{i:05d}",
            "group_key": f"u{i:05d}/n",
            "namespace": "ml",
            "status": "succeeded",
            "ended_at": ended,
            "run_seconds": 3600.0,
            "node_count": 1,
            "samples": 2,
            "plans": [],
            "series_buckets": 0,
            "requested_core_hours": float(i + 1),
            "used_core_hours": 0.0,
            "requested_gib_hours": 0.0,
            "used_gib_hours": 0.0,
            "requested_gpu_hours": 0.0,
            "used_gpu_hours": 0.0,
            "oom_count": 0,
            "failure_count": 0,
        }
        for i in range(users)
    ]
    with Session(db) as session:
        session.execute(insert(JobSummaryRow), summaries)
        # Their day rows, as the summary store writes them with each summary.
        write_usage_days(session, [JobSummaryRow(**values) for values in summaries])
        session.commit()
    bounded = settings.model_copy(update={"metrics_owner_series": 50, "metrics_cache_s": 0})
    with TestClient(create_app(bounded)) as client:
        metrics = scrape(client)
    for kind in ("user", "group"):
        series = metrics[f"brain_{kind}_waste_core_hours"]
        assert len(series) == 51
        keys = {dict(labels)[kind] for labels in series}
        # The 50 wasting most: users 9950..9999 (waste 9951..10000 core-hours).
        top = {f"u{i:05d}" if kind == "user" else f"u{i:05d}/n" for i in range(9950, 10_000)}
        assert keys == top | {"(other)"}
        # Nothing lost: the (other) series carries the remaining 9,950 users.
        assert one(metrics, f"brain_{kind}_jobs", **{kind: "(other)", "namespace": "ml"}) == 9950
        assert sum(series.values()) == approx(users * (users + 1) / 2)
    # Every portrait family stays within the bound as well.
    portrait = {n: s for n, s in metrics.items() if n.startswith(("brain_user_", "brain_group_"))}
    assert max(len(s) for s in portrait.values()) <= 51 * 4  # efficiency: 4 resources


def test_a_database_that_does_not_answer_leaves_the_other_metrics(fresh, history, monkeypatch):
    from brain.portraits import metrics as portrait_metrics

    def down(*_args, **_kwargs):
        from sqlalchemy.exc import OperationalError

        raise OperationalError("SELECT", {}, Exception("gone"))

    monkeypatch.setattr(portrait_metrics, "snapshot", down)
    response = fresh.get("/metrics")
    assert response.status_code == 200
    metrics = scrape(fresh)
    assert one(metrics, "brain_portrait_metrics_up") == 0
    assert "brain_namespace_jobs" not in metrics and "brain_http_requests_total" in metrics
