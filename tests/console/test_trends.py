"""Trends: waste, efficiency, OOM kills and cost per ISO week (UTC), summed in SQL on
PostgreSQL and SQLite, on the overview, namespace, user and group pages; the overview's
window; a namespace-limited token's trends hold its namespaces' jobs only.

The hand-worked history (``two_weeks``), at test_cost's prices ($0.05 a core-hour, $0.01
a GiB-hour, $3 an a100 GPU-hour), in two ISO weeks before the last (M is the Monday
00:00 UTC of the week that was a week ago, so the history ends at least 8.5 days before
now and the last 7 days hold none of it whatever the weekday; with M this week's Monday,
the last 7 days held ``late`` from Monday to Saturday noon):

- week M−14d: ``early``, Tuesday 10:00–12:00, 4 cores asked, 1 used, 1 GiB asked, 0.5
  used: 8 core-hours asked, 2 used, 6 wasted; 2 GiB-hours asked, 1 used. Efficiency
  mean(2/8, 1/2) = 0.375. One OOM kill. $0.42 asked (8 × 0.05 + 2 × 0.01), $0.11 used,
  $0.31 wasted.
- week M−7d: ``late``, Saturday 09:00–12:00 (past the week's middle: a bucket rounded
  to the nearest week, not down, would put it in the next), 2 cores asked and used, 1 a100 at 50 %:
  6 core-hours asked and used, 3 GiB-hours asked, 1.5 used, 3 GPU-hours asked, 1.5 used;
  and ``edge``, Sunday 23:00 of the week before to Monday 00:00 (it ends on the week's
  first instant, so it counts in this week), 1 core asked and used: 1 core-hour, 1
  GiB-hour asked, 0.5 used. The week: 7 core-hours asked and used, 4 GiB-hours asked,
  2 used, 3 GPU-hours asked, 1.5 used; efficiency mean(1, 0.5, 0.5) = 2/3. $9.39 asked
  (7 × 0.05 + 4 × 0.01 + 3 × 3), $4.87 used (0.35 + 0.02 + 4.5), $4.52 wasted.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.console.session import COOKIE
from brain.costs import Prices
from brain.db.engine import make_engine, make_session_factory
from brain.domain import utcnow
from brain.portraits.trend import TrendScope, week_count, week_start, weekly_trend
from brain.summaries import summarize_job
from tests.builders import add_event, flat_job
from tests.console.test_cost import PRICES

approx = pytest.approx
A100 = Prices(0.05, 0.01, 2.0, (("a100", 3.0),))


def two_weeks(session, namespace: str = "ml", user: str = "alice"):
    """The history above; returns (M−14d, M−7d), the two weeks' Mondays."""
    monday = week_start(utcnow() - timedelta(days=7))
    first, second = monday - timedelta(days=14), monday - timedelta(days=7)
    early = flat_job(
        session,
        f"{namespace}-early",
        start=first + timedelta(days=1, hours=10),
        cpu_request=4,
        cpu_used=1,
        hours=2,
        namespace=namespace,
        user=user,
    )
    add_event(session, early, first + timedelta(days=1, hours=11), "oom", "worker-0")
    late = flat_job(
        session,
        f"{namespace}-late",
        start=second + timedelta(days=5, hours=9),
        cpu_request=2,
        cpu_used=2,
        hours=3,
        gpu=1,
        gpu_util=0.5,
        gpu_type="a100",
        namespace=namespace,
        user=user,
    )
    edge = flat_job(
        session,
        f"{namespace}-edge",
        start=second - timedelta(hours=1),
        cpu_request=1,
        cpu_used=1,
        namespace=namespace,
        user=user,
    )
    for job in (early, late, edge):
        summarize_job(session, job)
    session.commit()
    return first, second


def iso_week(monday) -> str:
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def check_two_weeks(weeks, first, second) -> None:
    by_start = {w.start: w for w in weeks}
    one, two = by_start[first], by_start[second]
    assert (one.jobs, two.jobs) == (1, 2)
    assert one.hours.requested_core_hours - one.hours.used_core_hours == approx(6)
    assert one.hours.efficiency_score() == approx(0.375)
    assert (one.hours.oom_count, two.hours.oom_count) == (1, 0)
    assert two.hours.requested_core_hours == approx(7)
    assert two.hours.requested_gib_hours - two.hours.used_gib_hours == approx(2)
    assert two.hours.requested_gpu_hours - two.hours.used_gpu_hours == approx(1.5)
    assert two.hours.efficiency_score() == approx(2 / 3)
    assert (one.cost.requested_usd, one.cost.waste_usd) == (approx(0.42), approx(0.31))
    assert (two.cost.requested_usd, two.cost.waste_usd) == (approx(9.39), approx(4.52))
    # Every other week of the window is empty; the weeks are consecutive ISO weeks.
    assert all(
        w.jobs == 0 and w.hours.requested_core_hours == 0 for w in weeks if w not in (one, two)
    )
    assert [w.start - weeks[0].start for w in weeks] == [
        timedelta(weeks=i) for i in range(len(weeks))
    ]


def test_weeks_are_summed_in_sql_on_postgresql(session):
    first, second = two_weeks(session)
    now = utcnow()
    since = now - timedelta(days=30)
    weeks = weekly_trend(session, since, now, TrendScope("ml"), A100)
    assert len(weeks) == week_count(since, now)
    assert weeks[0].start == week_start(since) and weeks[-1].start == week_start(now)
    check_two_weeks(weeks, first, second)
    # The owner's weeks are the same jobs; another namespace has none of them.
    alice = weekly_trend(session, since, now, TrendScope("ml", "user", "alice"), A100)
    assert alice == weeks
    assert all(w.jobs == 0 for w in weekly_trend(session, since, now, TrendScope("ads"), A100))


def test_weeks_are_summed_in_sql_on_sqlite(sqlite_url):
    engine = make_engine(sqlite_url)
    try:
        with make_session_factory(engine)() as session:
            first, second = two_weeks(session)
            now = utcnow()
            weeks = weekly_trend(session, now - timedelta(days=30), now, TrendScope(), A100)
            check_two_weeks(weeks, first, second)
    finally:
        engine.dispose()


def test_a_week_ends_before_the_next_monday_and_a_window_cuts_its_first_week(session):
    first, second = two_weeks(session)
    # From M−14d's Wednesday: ``early`` (ended Tuesday) is outside; its week still shows.
    since = first + timedelta(days=2)
    weeks = weekly_trend(session, since, second + timedelta(days=7), TrendScope(), None)
    assert [(w.start, w.jobs) for w in weeks] == [(first, 0), (second, 2)]
    # Without prices there is no cost, only hours.
    assert all(w.cost is None for w in weeks)
    # Up to M−7d's first instant: ``edge``, ending on it, is the next week's.
    weeks = weekly_trend(session, first, second, TrendScope(), None)
    assert [(w.start, w.jobs) for w in weeks] == [(first, 1)]


def csv_rows(client, path: str, **params) -> list[dict[str, str]]:
    answer = client.get(path, params={"format": "csv", **params})
    assert answer.status_code == 200, answer.text
    return list(csv.DictReader(io.StringIO(answer.text)))


@pytest.fixture
def priced(settings):
    with TestClient(create_app(settings.model_copy(update=PRICES))) as client:
        yield client


def test_the_namespace_page_charts_and_tabulates_the_weeks(priced, session):
    first, second = two_weeks(session)
    rows = {r["week_start"][:10]: r for r in csv_rows(priced, "/ui/namespaces/ml", days=30)}
    one, two = rows[first.date().isoformat()], rows[second.date().isoformat()]
    assert one["iso_week"] == iso_week(first)
    assert (one["jobs"], float(one["cpu_waste_core_hours"]), one["oom_count"]) == ("1", 6, "1")
    assert float(one["efficiency_score"]) == approx(0.375)
    assert float(two["efficiency_score"]) == approx(0.666667)
    assert (float(two["requested_usd"]), float(two["waste_usd"])) == (approx(9.39), approx(4.52))

    html = unescape(priced.get("/ui/namespaces/ml", params={"days": 30}).text)
    # One chart each: the hours (used and wasted), efficiency, OOM kills and dollars.
    charts = re.findall(r'<svg class="trend" id="trend-([\w-]+)"', html)
    assert charts == ["gpu-hours", "cpu-hours", "memory-hours", "efficiency", "oom", "cost"]
    cpu = re.search(r'<svg class="trend" id="trend-cpu-hours".*?</svg>', html, re.S).group(0)
    assert (
        '<title id="trend-cpu-hours-title">Core-hours: used and wasted, per ISO week (UTC)' in cpu
    )
    assert "ISO week (UTC)</text>" in cpu and ">Core-hours</text>" in cpu
    week = iso_week(first)
    assert f"{week}: 2 used, 6 wasted" in cpu  # the text alternative
    assert f"<title>{week}: 6 Core-hours wasted</title>" in cpu  # the bar's own
    # The 8 core-hours of that week set the axis: four steps of 2.
    assert [t for t in re.findall(r'class="tick"[^>]*>([\d,.]+)<', cpu)][:5] == [
        "0",
        "2",
        "4",
        "6",
        "8",
    ]
    # OOM kills count whole: one kill sets an axis of 0 to 4, not of quarters.
    oom = re.search(r'id="trend-oom".*?</svg>', html, re.S).group(0)
    assert re.findall(r'class="tick"[^>]*>([\d,.]+)<', oom)[:5] == ["0", "1", "2", "3", "4"]
    efficiency = re.search(r'id="trend-efficiency".*?</svg>', html, re.S).group(0)
    assert f"{week}: 38% efficiency" in efficiency and "<polyline" in efficiency
    # The tiles add the weeks up.
    assert 'data-metric="jobs">3<' in html and 'data-metric="oom-kills">1<' in html
    assert 'href="/ui/users/alice?namespace=ml"' in html


def test_the_overview_has_a_window_and_its_trends_follow_it(priced, session):
    first, second = two_weeks(session)
    html = unescape(priced.get("/ui/", params={"days": 90}).text)
    assert "The last 90 days" in html and 'data-table="trend"' in html
    # From M−14d's Monday to its Sunday, whole days: ``early`` alone.
    window = {
        "from": first.date().isoformat(),
        "to": (first + timedelta(days=6)).date().isoformat(),
    }
    [week] = csv_rows(priced, "/ui/", **window)
    assert float(week["cpu_requested_core_hours"]) == approx(8)
    trend = csv_rows(priced, "/ui/", table="trend", **window)
    assert [(r["week_start"][:10], r["jobs"]) for r in trend] == [(first.date().isoformat(), "1")]
    page = unescape(priced.get("/ui/", params=window).text)
    assert f'value="{window["from"]}"' in page and f'value="{window["to"]}"' in page
    # The default window is the last 7 days: neither week of the history is in it.
    assert all(r["jobs"] == "0" for r in csv_rows(priced, "/ui/", table="trend"))


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"days": "5"}, "days '5' is not one of 7, 30, 90"),
        ({"to": "2026-01-01"}, "from is needed with to"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from–to spans more than 731 days"),
        ({"from": "2026-02-01", "to": "2026-01-01"}, "from must be before to"),
        ({"from": "yesterday"}, "from 'yesterday' is not a date"),
    ],
)
def test_a_window_that_does_not_parse_is_a_400_naming_the_field(priced, params, problem):
    for path in ("/ui/", "/ui/namespaces/ml"):
        page = priced.get(path, params=params)
        assert page.status_code == 400 and problem in unescape(page.text), path
        table = priced.get(path, params={**params, "format": "csv"})
        assert table.status_code == 400 and table.text.startswith(problem), path


def test_owner_trends_follow_the_owner_window(priced, session):
    first, second = two_weeks(session)
    rows = csv_rows(priced, "/ui/users/alice", table="trend", days=90, namespace="ml")
    assert sum(int(r["jobs"]) for r in rows) == 3
    assert sum(float(r["cpu_requested_core_hours"]) for r in rows) == approx(15)
    html = priced.get("/ui/groups/alice/resnet", params={"days": 7}).text
    assert 'id="trend-oom"' in html and 'data-table="trend"' in html


def test_namespace_b_trends_are_unchanged_by_namespace_a_and_hidden_from_it(
    settings, session, make_token
):
    admin = make_token("admin", "admin")
    a_token = make_token("a-reader", "read", namespaces=["team-a"])
    two_weeks(session, "team-b", user="bob")
    b_reads = [
        ("/ui/namespaces/team-b", {"days": 30}),
        ("/ui/", {"namespace": "team-b", "table": "trend", "days": 30}),
        ("/ui/users/bob", {"namespace": "team-b", "table": "trend", "days": 30}),
    ]
    with TestClient(create_app(settings)) as client:
        client.cookies.set(COOKIE, admin, path="/ui/")
        before = [csv_rows(client, path, **params) for path, params in b_reads]
        assert sum(int(r["jobs"]) for r in before[0]) == 3
        # A's runs: the same user, more of them, in its own namespace.
        two_weeks(session, "team-a", user="bob")
        more = flat_job(
            session,
            "a-more",
            start=utcnow() - timedelta(days=3),
            cpu_request=64,
            cpu_used=1,
            namespace="team-a",
            user="bob",
        )
        summarize_job(session, more)
        session.commit()
        assert [csv_rows(client, path, **params) for path, params in b_reads] == before

        client.cookies.set(COOKIE, a_token, path="/ui/")
        refused = client.get("/ui/namespaces/team-b")
        assert refused.status_code == 403 and "not one of them" in unescape(refused.text)
        assert client.get("/ui/namespaces/team-b", params={"format": "csv"}).status_code == 403
        assert client.get("/ui/", params={"namespace": "team-b"}).status_code == 403
        mine = csv_rows(client, "/ui/namespaces/team-a", days=30)
        assert sum(int(r["jobs"]) for r in mine) == 4
        assert sum(float(r["cpu_requested_core_hours"]) for r in mine) == approx(15 + 64)
        # Without ?namespace= the overview shows the token's namespaces, with links.
        plain = client.get("/ui/").text
        assert 'data-table="trend"' not in plain
        assert 'href="/ui/namespaces/team-a"' in plain and "team-b" not in plain


@pytest.mark.parametrize("path", ["/ui/", "/ui/namespaces/ml"])
def test_the_overview_and_namespace_believe_runs_as_long_as_the_setting_allows(
    settings, session, path
):
    # alice's 30-hour run (past a one-day BRAIN_HISTORY_MAX_RUN_DAYS, within the default
    # 60) and her 1-hour run, both ended in the last 7 days.
    start = utcnow() - timedelta(days=3)
    long = flat_job(session, "long", start=start, cpu_request=4, cpu_used=1, hours=30)
    short = flat_job(session, "short", start=start, cpu_request=2, cpu_used=1)
    for job in (long, short):
        job.namespace = "ml"
        summarize_job(session, job)
    session.commit()
    # Wasted at $0.05 a core-hour and $0.01 a GiB-hour: the short run 1 core-hour and
    # 0.5 GiB-hour, $0.055; the long one 3 × 30 = 90 core-hours and 15 GiB-hours, $4.65.
    for days, jobs, waste_usd in ((60, 2, 0.055 + 4.65), (1, 1, 0.055)):
        update = {"history_max_run_days": days, **PRICES}
        with TestClient(create_app(settings.model_copy(update=update))) as client:
            trend = csv_rows(client, path, table="trend")
            assert sum(int(r["jobs"]) for r in trend) == jobs, days
            (waster,) = csv_rows(client, path, table="wasters")
            assert (waster["user"], int(waster["jobs"])) == ("alice", jobs)
            assert float(waster["waste_usd"]) == approx(waste_usd), days
