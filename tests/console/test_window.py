"""The jobs list's time window: the last 7, 30 or 90 days, or a custom from/to."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.console.window import window_of
from brain.summaries import summarize_job
from tests.builders import flat_job, recent_hour

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


@pytest.fixture
def ages(session, history) -> dict[str, datetime]:
    """Besides the history's four jobs (started 3 days ago): one 40 and one 100 days ago.
    Returns their starts by uid."""
    starts = {}
    for uid, days_ago in (("old-40", 40), ("old-100", 100)):
        starts[uid] = recent_hour(days_ago)
        job = flat_job(session, uid, start=starts[uid], cpu_request=2, cpu_used=1)
        summarize_job(session, job)
    session.commit()
    return starts


def listed(client, **params) -> list[str]:
    html = client.get("/ui/jobs", params=params).text
    return sorted(re.findall(r'<tr data-uid="([^"]+)"', html))


RECENT = ["bob-1", "flat-a", "flat-b", "hand-1"]


def test_the_last_7_30_or_90_days(client, ages):
    assert listed(client) == sorted([*RECENT, "old-40", "old-100"])
    assert listed(client, days="7") == RECENT
    assert listed(client, days="30") == RECENT
    assert listed(client, days="90") == sorted([*RECENT, "old-40"])
    # The choice stays selected, and the CSV of the list is the same window.
    html = client.get("/ui/jobs", params={"days": "90"}).text
    assert '<option value="90" selected>' in html
    csv = client.get("/ui/jobs", params={"days": "90", "format": "csv"}).text
    assert sorted(line.split(",")[0] for line in csv.splitlines()[1:]) == listed(client, days="90")


def test_a_custom_from_to_counts_the_to_day_whole(client, ages):
    # The day it started on, as stored: recomputed after a midnight since, it is the next.
    start = ages["old-40"].date()
    # Only the day old-40 started on: from = to = that day.
    assert listed(client, **{"from": start.isoformat(), "to": start.isoformat()}) == ["old-40"]
    # From that day on: it and the recent ones; up to the day before it: only old-100.
    assert listed(client, **{"from": start.isoformat()}) == sorted([*RECENT, "old-40"])
    before = (start - timedelta(days=1)).isoformat()
    assert listed(client, to=before) == ["old-100"]


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"days": "14"}, "days &#39;14&#39; is not one of 7, 30, 90"),
        ({"from": "yesterday"}, "from &#39;yesterday&#39; is not a date"),
        ({"days": "7", "to": "2026-11-01"}, "give days or from/to, not both"),
        ({"from": "2026-11-02", "to": "2026-11-01"}, "from must be before to"),
    ],
)
def test_a_bad_window_is_named_and_filters_nothing(client, ages, params, problem):
    response = client.get("/ui/jobs", params=params)
    assert response.status_code == 200 and problem in response.text
    assert listed(client, **params) == sorted([*RECENT, "old-40", "old-100"])
    as_csv = client.get("/ui/jobs", params={**params, "format": "csv"})
    assert as_csv.status_code == 400


@given(
    st.dates(date(2000, 1, 1), date(2100, 1, 1)),
    st.integers(min_value=0, max_value=3650),
)
def test_a_date_window_spans_its_days_whole(start, length):
    end = start + timedelta(days=length)
    window = window_of(None, start.isoformat(), end.isoformat(), NOW)
    assert window.problems == []
    assert window.before - window.since == timedelta(days=length + 1)
    assert window.since.tzinfo is not None and window.since.hour == 0


def test_an_owner_page_over_7_30_or_90_days(client, ages):
    def jobs(days: str | None) -> str:
        params = {} if days is None else {"days": days}
        html = client.get("/ui/users/alice", params=params).text
        return re.search(r'data-metric="jobs">(\d+)<', html).group(1)

    # alice: the history's three recent jobs; old-40 and old-100 are hers too.
    assert (jobs(None), jobs("7"), jobs("30"), jobs("90")) == ("3", "3", "3", "4")
    html = client.get("/ui/users/alice", params={"days": "90", "namespace": "ml"}).text
    assert "<strong>90 days</strong>" in html
    assert 'href="?namespace=ml&amp;days=7"' in html
    wrong = client.get("/ui/groups/alice/bert", params={"days": "14"})
    assert wrong.status_code == 400 and "days &#39;14&#39; is not one of 7, 30, 90" in wrong.text
