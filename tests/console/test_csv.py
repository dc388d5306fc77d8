"""Every console table as CSV (?format=csv, &table= for a page's others), on the history
of tests/console/conftest.py at tests/console/test_cost.py's prices."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.domain import utcnow
from tests.console import test_cost

# The server at test_cost's prices.
priced = test_cost.priced

approx = pytest.approx


def table(client, path: str, **params) -> list[dict[str, str]]:
    response = client.get(path, params={"format": "csv", **params})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"].startswith("attachment; filename=")
    return list(csv.DictReader(io.StringIO(response.text)))


def by(rows, key: str) -> dict[str, dict[str, str]]:
    return {row[key]: row for row in rows}


def test_the_jobs_list_as_csv_has_every_matching_job_with_units_in_its_columns(priced, history):
    rows = by(table(priced, "/ui/jobs", user="alice"), "uid")
    assert sorted(rows) == ["flat-a", "flat-b", "hand-1"]
    hand = rows["hand-1"]
    # tests/summaries/test_compute.py's hand numbers; $0.05 a core-hour, $0.01 a GiB-hour,
    # $2 a GPU-hour: 16 × 0.05 + 32 × 0.01 + 1.5 × 2 = $4.12 requested.
    assert float(hand["cpu_requested_core_hours"]) == approx(16)
    assert float(hand["cpu_used_core_hours"]) == approx(9.5)
    assert float(hand["cpu_waste_core_hours"]) == approx(6.5)
    assert float(hand["memory_requested_gib_hours"]) == approx(32)
    assert float(hand["gpu_requested_gpu_hours"]) == approx(1.5)
    assert float(hand["requested_usd"]) == approx(4.12)
    assert hand["namespace"] == "ml" and hand["started_at"].endswith("Z")
    # flat-b: 2 GPUs for 2 h at 25 %: 4 GPU-hours asked, 1 used.
    assert float(rows["flat-b"]["gpu_requested_gpu_hours"]) == approx(4)
    assert float(rows["flat-b"]["gpu_used_gpu_hours"]) == approx(1)
    assert float(rows["flat-a"]["cpu_efficiency"]) == approx(0.25)


def test_the_job_page_tables_as_csv(priced, history):
    roles = by(table(priced, "/ui/jobs/hand-1"), "role")
    assert roles["ps"]["node_count"] == "1" and roles["worker"]["node_count"] == "2"
    assert float(roles["ps"]["cpu_request_cores"]) == 4
    assert float(roles["ps"]["cpu_used_max_cores"]) == 3
    assert float(roles["ps"]["memory_used_max_mib"]) == 6144
    assert float(roles["worker"]["memory_request_mib"]) == 16384
    [hours] = table(priced, "/ui/jobs/hand-1", table="job-hours")
    assert float(hours["cpu_requested_core_hours"]) == approx(16)
    assert float(hours["waste_usd"]) == approx(2.025)
    # The recommendation (tests/console/test_advice.py): ps 4 → 3 cores, 8192 → 7373 MiB;
    # workers 2 × 16384 → 2 × 8192 MiB.
    advice = by(table(priced, "/ui/jobs/hand-1", table="advice"), "role")
    assert float(advice["ps"]["saves_cpu_cores"]) == approx(1)
    assert float(advice["ps"]["saves_memory_mib"]) == approx(819)
    assert float(advice["worker"]["saves_memory_mib"]) == approx(16384)
    assert float(advice["worker"]["saves_usd_per_day"]) == approx(3.84)
    events = table(priced, "/ui/jobs/hand-1", table="events")
    assert [(e["kind"], e["node"]) for e in events] == [("oom", "worker-1"), ("failed", "worker-0")]


def test_the_owner_pages_and_the_overview_as_csv(priced, history):
    wasteful = by(table(priced, "/ui/users/alice"), "uid")
    assert sorted(wasteful) == ["flat-a", "flat-b", "hand-1"]
    # flat-b wastes 12.22 − 3.21 dollars (tests/console/test_cost.py).
    assert float(wasteful["flat-b"]["waste_usd"]) == approx(12.22 - 3.21)
    asked = utcnow()
    trend = table(priced, "/ui/users/alice", table="trend")
    answered = utcnow()
    # The 30-day window's ISO weeks, Monday to Monday, the last holding the moment the
    # server read its clock (between asked and answered: a Monday 00:00 may fall between).
    starts = [datetime.fromisoformat(w["week_start"]) for w in trend]
    assert all(b - a == timedelta(weeks=1) for a, b in zip(starts, starts[1:], strict=False))
    assert starts[0].weekday() == 0 and starts[-1] <= answered
    assert asked < starts[-1] + timedelta(weeks=1)
    assert asked - timedelta(days=30) < starts[0] + timedelta(weeks=1)
    assert sum(int(w["jobs"]) for w in trend) == 3
    # hand-1 16 + flat-a 4 + flat-b 4 core-hours requested; $ as the wasteful table's.
    assert sum(float(w["cpu_requested_core_hours"]) for w in trend) == approx(24)
    assert sum(float(w["oom_count"]) for w in trend) == 1
    group = table(priced, "/ui/groups/alice/bert", table="advice")
    assert [(r["uid"], r["role"]) for r in group] == [("flat-b", "worker")]
    assert float(group[0]["saves_memory_mib"]) == approx(512)
    # The week: hand-1 16 + flat-a 4 + flat-b 4 + bob-1 8 core-hours requested.
    [week] = table(priced, "/ui/")
    assert float(week["cpu_requested_core_hours"]) == approx(32)
    wasters = by(table(priced, "/ui/", table="wasters"), "user")
    assert sorted(wasters) == ["alice", "bob"] and wasters["alice"]["jobs"] == "3"
    suggestion = by(table(priced, "/ui/suggest", user="alice", name="resnet"), "role")
    assert float(suggestion["ps"]["cpu_request_cores"]) == 3
    assert float(suggestion["worker"]["memory_mib"]) == 8192


def test_a_wrong_format_or_table_is_a_400_naming_the_field(priced, history):
    wrong = priced.get("/ui/jobs/hand-1", params={"format": "xml"})
    assert wrong.status_code == 400 and wrong.text.startswith("format: 'xml'")
    unknown = priced.get("/ui/users/alice", params={"format": "csv", "table": "nope"})
    assert unknown.status_code == 400
    assert unknown.text.startswith("table: 'nope' is not a table of this page")
    assert "wasteful, trend, advice" in unknown.text
    bad = priced.get("/ui/jobs", params={"format": "csv", "status": "done"})
    assert bad.status_code == 400 and "status 'done'" in bad.text


def test_each_tables_csv_link_keeps_the_pages_query(priced, history):
    html = priced.get("/ui/jobs/hand-1", params={"namespace": "ml"}).text
    links = dict(re.findall(r'data-csv="([^"]+)" href="([^"]+)"', html))
    assert sorted(links) == ["advice", "events", "job-hours", "roles"]
    for name, href in links.items():
        href = href.replace("&amp;", "&")
        assert "namespace=ml" in href and f"table={name}" in href, href
        response = priced.get(href)
        assert response.status_code == 200 and response.text.count("\n") >= 2, href
    jobs = priced.get("/ui/jobs", params={"user": "bob"}).text
    [href] = re.findall(r'data-csv="jobs" href="([^"]+)"', jobs)
    rows = list(csv.DictReader(io.StringIO(priced.get(href.replace("&amp;", "&")).text)))
    assert [row["uid"] for row in rows] == ["bob-1"]


def test_an_empty_advice_table_keeps_its_header(settings, history, make_token):
    """A namespace-limited token gets no advice: the CSV still names every column."""
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with TestClient(create_app(settings)) as client:
        client.cookies.set("brain_console", ml)
        response = client.get("/ui/jobs/hand-1", params={"format": "csv", "table": "advice"})
    assert response.status_code == 200
    header, *rows = response.text.splitlines()
    assert rows == []
    assert header.split(",")[:5] == ["uid", "name", "confidence", "role", "nodes_now"]
    assert "saves_usd_per_day" in header.split(",")
