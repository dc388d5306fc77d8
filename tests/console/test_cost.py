"""Dollars: at the default table (named wherever dollars show) unless prices are set; at the
set prices in portraits, rankings, suggestions and the console; none where the defaults are
off and nothing is set. Set prices: $0.05 a core-hour, $0.01 a GiB-hour, $2 a GPU-hour, $3
for an a100. Defaults: $0.031611 a core-hour, $0.004237 a GiB-hour, $2.933908 for an a100,
nothing for a GPU of no or another type."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.config import Settings
from brain.costs import DEFAULT_PRICE_SOURCE, Prices
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


def test_gpu_types_are_priced_whatever_their_case():
    prices = Prices(gpu_hour_usd=2.0, gpu_hour_usd_by_type=(("a100", 3.0),))
    assert (prices.gpu_price("A100"), prices.gpu_price("a100"), prices.gpu_price("T4")) == (
        3.0,
        3.0,
        2.0,
    )


def test_unset_prices_are_the_default_table_and_pages_name_its_source(client, history):
    # hand-1: 16 core-hours and 32 GiB-hours requested, 9.5 and 12 used, 1.5 GPU-hours of
    # no type (no default price). 16 x 0.031611 + 32 x 0.004237 = 0.505776 + 0.135584 =
    # $0.64136; used 9.5 x 0.031611 + 12 x 0.004237 = 0.3003045 + 0.050844 = $0.3511485.
    job = client.get("/api/v1/portraits/jobs/hand-1").json()["summary"]["cost"]
    assert job == approx({"requested_usd": 0.64136, "used_usd": 0.3511485, "waste_usd": 0.2902115})
    page = unescape(client.get("/ui/jobs/hand-1").text)
    assert f"Cost at default prices (source: {DEFAULT_PRICE_SOURCE}): requested $0.64" in page
    assert 'data-banner="default-prices"' in page and "BRAIN_PRICE_*" in page
    owner = unescape(client.get("/ui/users/alice").text)
    assert f"Wasted at default prices (source: {DEFAULT_PRICE_SOURCE})" in owner
    namespace = unescape(client.get("/ui/namespaces/ml", params={"days": 30}).text)
    assert f"Wasted at default prices (source: {DEFAULT_PRICE_SOURCE})" in namespace
    assert f"Cost at default prices (source: {DEFAULT_PRICE_SOURCE}): used and wasted" in namespace


def test_defaults_off_and_no_price_set_no_dollars(settings, history):
    off = settings.model_copy(update={"price_defaults": False})
    with TestClient(create_app(off)) as client:
        assert client.get("/api/v1/portraits/jobs/hand-1").json()["summary"]["cost"] is None
        assert client.get("/api/v1/portraits/users/alice").json()["totals"]["cost"] is None
        page = client.get("/ui/users/alice").text
        assert "Wasted at" not in page and 'data-banner="default-prices"' not in page


def test_each_set_price_overrides_its_default_and_an_empty_one_prices_nothing():
    # Only memory set; CPU set empty (not priced); GPUs left at the default table.
    settings = Settings(price_gib_hour_usd=0.01, price_core_hour_usd="")
    prices = settings.prices
    assert (prices.core_hour_usd, prices.gib_hour_usd, prices.gpu_price("a100")) == (
        None,
        0.01,
        2.933908,
    )
    assert prices.defaults == {"gpu"}
    assert prices.label.endswith(f"default prices (source: {DEFAULT_PRICE_SOURCE}) for GPUs")
    # 16 core-hours (unpriced) and 32 GiB-hours x 0.01 = $0.32; 2 a100-hours x 2.933908.
    hours = Hours(16, 8, 32, 16, 2, 1)
    assert prices.of(hours, "a100").requested_usd == approx(0.32 + 2 * 2.933908)
    origins = settings.price_origins()
    assert origins["core_hour_usd"]["from"] == "not priced (BRAIN_PRICE_CORE_HOUR_USD empty)"
    assert origins["gib_hour_usd"] == {"usd": 0.01, "from": "BRAIN_PRICE_GIB_HOUR_USD"}
    assert origins["gpu_hour_usd_by_type"]["from"] == f"default ({DEFAULT_PRICE_SOURCE})"
    assert origins["gpu_hour_usd"]["from"] == "not priced (no default)"


def test_every_price_set_no_banner_and_the_configured_prices_named(priced, history):
    page = unescape(priced.get("/ui/jobs/hand-1").text)
    assert "Cost at the configured prices:" in page
    assert 'data-banner="default-prices"' not in page


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
