"""Dollars: none by default; at the set prices in portraits, rankings, suggestions and the
console. Prices: $0.05 a core-hour, $0.01 a GiB-hour, $2 a GPU-hour, $3 for an a100."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.costs import Prices
from brain.domain import RoleSpec
from brain.summaries import summarize_job
from brain.summaries.hours import Hours
from tests.builders import add_node, add_points, make_job, recent_hour

approx = pytest.approx
PRICES = {
    "price_core_hour_usd": 0.05,
    "price_gib_hour_usd": 0.01,
    "price_gpu_hour_usd": 2.0,
    "price_gpu_hour_usd_by_type": {"a100": 3.0},
}


@pytest.fixture
def priced(settings):
    with TestClient(create_app(settings.model_copy(update=PRICES))) as client:
        yield client


def test_prices_price_each_resource_and_gpus_by_type():
    prices = Prices(0.05, 0.01, 2.0, (("a100", 3.0),))
    hours = Hours(16, 9.5, 32, 12, 1.5, 0.75)
    # 16 × 0.05 + 32 × 0.01 + 1.5 × 2 = 4.12; used 0.475 + 0.12 + 1.5 = 2.095.
    cost = prices.of(hours, None)
    assert (cost.requested_usd, cost.used_usd) == (approx(4.12), approx(2.095))
    assert prices.of(hours, "a100").requested_usd == approx(4.12 + 1.5)
    assert not Prices().configured and Prices().of(hours, None).requested_usd == 0


def test_no_price_no_dollars(client, history):
    assert client.get("/api/v1/portraits/jobs/hand-1").json()["summary"]["cost"] is None
    assert client.get("/api/v1/portraits/users/alice").json()["totals"]["cost"] is None
    assert "Wasted at the configured prices" not in client.get("/ui/users/alice").text


def test_job_and_user_portraits_in_dollars(priced, history):
    job = priced.get("/api/v1/portraits/jobs/hand-1").json()["summary"]["cost"]
    assert job == approx({"requested_usd": 4.12, "used_usd": 2.095, "waste_usd": 2.025})
    alice = priced.get("/api/v1/portraits/users/alice").json()
    # hand-1 4.12 / 2.095; flat-a 4 core-h + 1 GiB-h = 0.21 / 0.055; flat-b (a100)
    # 4 core-h + 2 GiB-h + 4 GPU-h × 3 = 12.22 / 4 × 0.05 + 0.01 + 1 × 3 = 3.21.
    assert alice["totals"]["cost"]["requested_usd"] == approx(4.12 + 0.21 + 12.22)
    assert alice["totals"]["cost"]["used_usd"] == approx(2.095 + 0.055 + 3.21)
    flat_b = next(j for j in alice["wasteful_jobs"]["items"] if j["uid"] == "flat-b")
    assert flat_b["cost"]["waste_usd"] == approx(12.22 - 3.21)

    html = unescape(priced.get("/ui/users/alice").text)
    assert f"${alice['totals']['cost']['waste_usd']:,.2f}" in html
    page = unescape(priced.get("/ui/jobs/hand-1").text)
    assert f"wasted ${job['waste_usd']:,.2f}" in page


def test_ranking_prices_each_gpu_type_apart(priced, history):
    ranking = priced.get("/api/v1/portraits", params={"by": "gpu_type"}).json()["items"]
    by_type = {row["key"]: row["totals"]["cost"] for row in ranking}
    assert by_type["a100"]["requested_usd"] == approx(12.22)
    # No type: hand-1, flat-a and bob-1 (8 core-h + 1 GiB-h = 0.41) at $2 a GPU-hour.
    assert by_type[None]["requested_usd"] == approx(4.12 + 0.21 + 0.41)
    overview = unescape(priced.get("/ui/").text)
    assert 'data-cost="week"' in overview


def test_a_suggestion_says_what_it_saves_a_day(priced, session):
    t0 = recent_hour()
    job = make_job(
        session,
        "gpt-1",
        start=t0,
        user="carol",
        name="gpt",
        gpu_type="a100",
        roles={"worker": RoleSpec(count=2, cpu=8, memory_mib=16384, gpu=1)},
    )
    for name in ("worker-0", "worker-1"):
        add_node(session, job, name, "worker", created_at=t0, cpu=8, memory_mib=16384, gpu=1)
        add_points(
            session,
            job,
            name,
            "worker",
            [
                {"ts": t0 + timedelta(minutes=m), "cpu": 2, "memory_mib": 4096, "gpu_util": 0.9}
                for m in (0, 30, 60)
            ],
        )
    summarize_job(session, job)
    session.commit()

    body = priced.get("/api/v1/suggestions", params={"user": "carol", "name": "gpt"}).json()
    cost = body["cost"]
    # gpt-1 asked 2 × (8 cores × 0.05 + 16 GiB × 0.01 + 1 a100 × 3) = $7.12 an hour.
    assert cost["last_run_uid"] == "gpt-1"
    assert cost["last_run_usd_per_day"] == approx(7.12 * 24)
    worker = next(r for r in body["roles"] if r["role"] == "worker")
    count = worker["count"] or 2
    gpu = 1 if worker["gpu"] is None else worker["gpu"]
    hourly = count * (worker["cpu_request"] * 0.05 + worker["memory_mib"] / 1024 * 0.01 + gpu * 3)
    assert cost["suggested_usd_per_day"] == approx(hourly * 24)
    assert cost["saves_usd_per_day"] == approx(7.12 * 24 - hourly * 24)
    assert cost["saves_usd_per_day"] > 0  # it used a quarter of its CPU and memory

    text = priced.get(
        "/api/v1/suggestions", params={"user": "carol", "name": "gpt", "format": "text"}
    ).text
    assert f"this run would save ${cost['saves_usd_per_day']:,.2f} a day against gpt-1" in text
    page = unescape(priced.get("/ui/suggest", params={"user": "carol", "name": "gpt"}).text)
    assert f"this run would save ${cost['saves_usd_per_day']:,.2f} a day" in page


def test_no_saving_is_claimed_against_a_run_that_declared_no_roles(priced, session):
    t0 = recent_hour()
    job = make_job(session, "bare-1", start=t0, user="dave", name="x")  # no roles
    add_node(session, job, "worker-0", "worker", created_at=t0, cpu=4, memory_mib=4096)
    add_points(
        session,
        job,
        "worker-0",
        "worker",
        [{"ts": t0 + timedelta(minutes=m), "cpu": 1, "memory_mib": 1024} for m in (0, 60)],
    )
    summarize_job(session, job)
    session.commit()
    cost = priced.get("/api/v1/suggestions", params={"user": "dave", "name": "x"}).json()["cost"]
    assert cost["last_run_uid"] == "bare-1"
    assert cost["last_run_usd_per_day"] is None and cost["saves_usd_per_day"] is None
