"""User and group pages over the overview's window: the last 7, 30 or 90 days, or from
one day to another; their totals, priority, most wasteful jobs, advice and trends follow
it, and a window that does not parse is a 400 naming the field.

The history is test_trends' ``two_weeks`` (alice's jobs, of group alice/resnet, in
namespace ml): ``ml-early`` alone in the ISO week M−14d (8 core-hours asked, 2 used; 2
GiB-hours asked, 1 used; one OOM kill), ``ml-late`` (3 GPU-hours asked, 1.5 used) and
``ml-edge`` (ending on M−7d's first instant) in the week M−7d."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.domain import utcnow
from brain.summaries import summarize_job
from tests.builders import flat_job
from tests.console.test_trends import csv_rows, two_weeks


def metric(html: str, name: str) -> str:
    return re.search(rf'data-metric="{name}">([^<]*)<', html).group(1)


def days_of(start, days: int) -> dict[str, str]:
    """The whole days from ``start`` on, as the window form sends them."""
    last = start + timedelta(days=days - 1)
    return {"from": start.date().isoformat(), "to": last.date().isoformat()}


@pytest.mark.parametrize("path", ["/ui/users/alice", "/ui/groups/alice/resnet"])
def test_an_owner_page_over_one_week_counts_that_weeks_jobs_only(client, session, path):
    first, _ = two_weeks(session)
    window = {"namespace": "ml", **days_of(first, 7)}
    html = unescape(client.get(path, params=window).text)
    # ml-early alone: 6 core-hours and 1 GiB-hour wasted, no GPU; efficiency
    # mean(2/8, 1/2) = 37.5%; one OOM kill in one job.
    assert metric(html, "jobs") == "1"
    assert (metric(html, "cpu-waste"), metric(html, "memory-waste")) == ("6.0", "1.0")
    assert (metric(html, "gpu-waste"), metric(html, "efficiency")) == ("0.0", "38%")
    assert metric(html, "oom-rate") == "100%"
    assert "1 job(s) in the window, fewer than priority_min_jobs 3" in html
    assert re.findall(r'<tr data-uid="([^"]+)"', html) == ["ml-early"]
    # The form keeps the namespace and shows the window asked for.
    assert '<input type="hidden" name="namespace" value="ml">' in html
    assert f'value="{window["from"]}"' in html and f'value="{window["to"]}"' in html

    trend = csv_rows(client, path, table="trend", **window)
    assert [(r["week_start"][:10], r["jobs"]) for r in trend] == [(window["from"], "1")]
    wasteful = csv_rows(client, path, table="wasteful", **window)
    assert [r["uid"] for r in wasteful] == ["ml-early"]
    advice = csv_rows(client, path, table="advice", **window)
    assert {r["uid"] for r in advice} == {"ml-early"}


def test_a_users_page_over_the_next_week_lists_its_jobs_most_wasteful_first(client, session):
    _, second = two_weeks(session)
    html = unescape(client.get("/ui/users/alice", params=days_of(second, 7)).text)
    # ml-late wasted 1.5 GPU-hours, ml-edge none; ml-early ended the week before.
    assert metric(html, "jobs") == "2" and metric(html, "gpu-waste") == "1.5"
    assert re.findall(r'<tr data-uid="([^"]+)"', html) == ["ml-late", "ml-edge"]
    # From the first week's Monday on, without an end: all three, up to now.
    since = {"from": (second - timedelta(days=7)).date().isoformat()}
    assert metric(client.get("/ui/users/alice", params=since).text, "jobs") == "3"


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"days": "5"}, "days '5' is not one of 7, 30, 90"),
        ({"to": "2026-01-01"}, "from is needed with to"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from–to spans more than 731 days"),
        ({"from": "yesterday"}, "from 'yesterday' is not a date"),
        ({"days": "7", "from": "2026-01-01"}, "give days or from/to, not both"),
    ],
)
def test_an_owner_window_that_does_not_parse_is_a_400_naming_the_field(client, params, problem):
    for path in ("/ui/users/alice", "/ui/groups/alice/bert"):
        page = client.get(path, params=params)
        assert page.status_code == 400 and problem in unescape(page.text), path
        table = client.get(path, params={**params, "format": "csv"})
        assert table.status_code == 400 and table.text.startswith(problem), path


def test_an_owner_page_believes_runs_as_long_as_the_setting_allows(settings, session):
    # A 30-hour run: within the default 60 days, past a one-day BRAIN_HISTORY_MAX_RUN_DAYS.
    start = utcnow() - timedelta(days=3)
    run = flat_job(session, "long", start=start, cpu_request=4, cpu_used=1, hours=30)
    summarize_job(session, run)
    session.commit()
    for days, jobs in ((60, 1), (1, 0)):
        app = create_app(settings.model_copy(update={"history_max_run_days": days}))
        with TestClient(app) as client:
            assert metric(client.get("/ui/users/alice").text, "jobs") == str(jobs)
            trend = csv_rows(client, "/ui/users/alice", table="trend")
            assert sum(int(r["jobs"]) for r in trend) == jobs, days
