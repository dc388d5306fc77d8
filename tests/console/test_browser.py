"""The console in a real browser: Playwright driving Debian's Chromium against a Brain
served on loopback over the test's PostgreSQL.

Chromium comes from Debian (scripts/test.sh installs it), never from Playwright's own
download. Where the browser or the Playwright package is missing these tests fail when
BRAIN_REQUIRE_BROWSER is set (scripts/test.sh, hence CI, sets it) and are reported as
skipped, with the reason, otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn

from api.app import create_app
from brain.domain import utcnow
from brain.portraits.trend import week_start
from brain.summaries import summarize_job
from tests.builders import add_event, flat_job, job_body, recent_hour
from tests.console.test_cost import PRICES
from tests.ports import free_port

CHROMIUM = os.environ.get("BRAIN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = bool(os.environ.get("BRAIN_REQUIRE_BROWSER"))
# Set to a directory to keep a screenshot of every page (docs/console.md's pictures).
SCREENSHOTS = os.environ.get("BRAIN_CONSOLE_SCREENSHOTS")


def _unavailable(reason: str) -> None:
    message = f"{reason}: scripts/test.sh installs it"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is missing (pip install -e '.[test]')")
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium is missing at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class LiveServer:
    """Brain on a loopback port in a thread of the test process."""

    def __init__(self, settings) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(settings), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *_exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def api(self, path: str, **params) -> dict:
        return httpx.get(self.base + path, params=params, timeout=10).json()


@pytest.fixture
def live(settings, history) -> Iterator[LiveServer]:
    """Brain with prices set, so dollars show beside the hours."""
    with LiveServer(settings.model_copy(update=PRICES)) as server:
        yield server


class Watched:
    """A page whose console errors and requests are recorded."""

    def __init__(self, page, origin: str) -> None:
        self.page = page
        self.origin = origin
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def open(self, path: str):
        response = self.page.goto(self.origin + path)
        self.page.wait_for_load_state("networkidle")
        return response

    def check_clean(self) -> None:
        assert self.errors == []
        foreign = [u for u in self.requests if not u.startswith(self.origin + "/")]
        assert foreign == []


@pytest.fixture
def watched(browser, live) -> Iterator[Watched]:
    context = browser.new_context()
    yield Watched(context.new_page(), live.base)
    context.close()


PAGES = [
    ("/ui/", "Overview", "overview"),
    ("/ui/jobs?sort=gpu_waste", "Jobs", "jobs"),
    ("/ui/jobs/hand-1", "resnet", "job"),
    ("/ui/users/alice", "User alice", "user"),
    ("/ui/groups/alice/bert", "Group alice/bert", "group"),
    ("/ui/suggest?user=alice&name=resnet", "What should my next run request?", "suggest"),
    ("/ui/optimizers", "Optimizers", "optimizers"),
    # Its picture comes from the trends test, over weeks of runs.
    ("/ui/namespaces/ml", "Namespace ml", None),
]


def test_every_page_loads_clean_and_stays_on_the_origin(watched):
    for path, heading, picture in PAGES:
        response = watched.open(path)
        assert response.status == 200, path
        assert watched.page.locator("h1").first.inner_text().startswith(heading), path
        if SCREENSHOTS and picture:
            tall = picture not in ("optimizers",)
            watched.page.screenshot(path=f"{SCREENSHOTS}/console-{picture}.png", full_page=tall)
    watched.check_clean()
    # The optimizers fold their details: the page was 9,500 px tall with them open.
    watched.open("/ui/optimizers")
    height = watched.page.evaluate("document.documentElement.scrollHeight")
    assert height < 3000, height
    # The assets came from Brain itself.
    assert any(u.endswith("/ui/static/uplot/uPlot.iife.min.js") for u in watched.requests)


def test_numbers_on_the_pages_equal_the_apis(watched, live):
    watched.open("/ui/jobs/hand-1")
    api = live.api("/api/v1/portraits/jobs/hand-1")["summary"]["hours"]
    cpu = watched.page.locator('[data-table="job-hours"] tr[data-resource="cpu"] td')
    assert cpu.all_inner_texts()[:3] == [
        f"{api['cpu'][k]:,.2f}"
        for k in ("requested_core_hours", "used_core_hours", "waste_core_hours")
    ]
    assert cpu.all_inner_texts()[:3] == ["16.00", "9.50", "6.50"]  # worked out by hand
    cost = live.api("/api/v1/portraits/jobs/hand-1")["summary"]["cost"]
    shown = watched.page.locator('[data-cost="job"]').inner_text()
    assert f"wasted ${cost['waste_usd']:,.2f}" in shown

    watched.open("/ui/users/alice")
    user = live.api("/api/v1/portraits/users/alice")["totals"]
    metric = watched.page.locator('[data-metric="gpu-waste"]').inner_text()
    assert metric == f"{user['hours']['gpu']['waste_gpu_hours']:,.1f}"
    assert watched.page.locator('[data-metric="jobs"]').inner_text() == str(user["jobs"]) == "3"
    watched.check_clean()


def test_charts_draw_with_the_events_marked(watched):
    watched.open("/ui/jobs/hand-1")
    # ps: CPU and memory; worker (GPUs): CPU, memory, GPU utilization, GPU memory; speed.
    assert watched.page.locator("#charts-root").get_attribute("data-drawn") == "7"
    painted = watched.page.evaluate(
        """() => [...document.querySelectorAll('#charts-root canvas')].map(c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })"""
    )
    assert len(painted) == 7 and all(n > 500 for n in painted)
    # The OOM of worker-1 is marked on the worker's charts: a red line of OOM colour.
    red = watched.page.evaluate(
        """() => [...document.querySelectorAll('#charts-root canvas')].map(c => {
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0; for (let i = 0; i < d.length; i += 4)
              if (d[i] === 0xd9 && d[i+1] === 0x30 && d[i+2] === 0x25) n++; return n; })"""
    )
    assert [n > 0 for n in red] == [False, False, True, True, True, True, False]
    watched.check_clean()


def test_a_one_sample_chart_spans_minutes_not_milliseconds(watched, live):
    ts = "2026-11-01T13:00:00Z"
    job = {"name": "one", "user": "erin", "status": "running", "started_at": ts,
           "roles": {"worker": {"count": 1, "cpu": 4, "memory_mib": 4096}}}  # fmt: skip
    assert httpx.put(f"{live.base}/api/v1/jobs/one-1", json=job).status_code == 201
    point = {"name": "one-1-worker-0", "role": "worker", "ts": ts, "cpu": 2, "memory_mib": 2048}
    pushed = httpx.post(f"{live.base}/api/v1/jobs/one-1/samples", json={"nodes": [point]})
    assert pushed.status_code == 200
    watched.open("/ui/jobs/one-1")
    spans = watched.page.evaluate(
        "() => [...document.querySelectorAll('#charts-root figure')].map(f => f.dataset.spanS)"
    )
    # Before: one sample spanned 1 s, ticked ":13.400 :13.600". Now ten minutes around it.
    assert spans and all(float(s) == 600 for s in spans), spans
    watched.check_clean()


def test_forms_are_labelled_and_work_from_the_keyboard(watched):
    watched.open("/ui/jobs")
    unlabelled = watched.page.evaluate(
        """() => [...document.querySelectorAll('input:not([type=hidden]), select')]
              .filter(e => !document.querySelector(`label[for="${e.id}"]`)).map(e => e.name)"""
    )
    assert unlabelled == []
    page = watched.page
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.get_by_label("User").fill("alice")
    page.keyboard.press("Tab")  # the fields follow in reading order
    assert page.evaluate("document.activeElement.id") == "f-group"
    with page.expect_navigation():
        page.keyboard.press("Enter")  # submits the filters
    assert "user=alice" in page.url
    rows = page.locator('[data-table="jobs"] tbody tr').evaluate_all(
        "r => r.map(x => x.dataset.uid)"
    )
    assert sorted(rows) == ["flat-a", "flat-b", "hand-1"]

    watched.open("/ui/suggest")
    page.get_by_label("User").fill("alice")
    page.get_by_label("Job name").fill("resnet")
    with page.expect_navigation():
        page.get_by_label("Job name").press("Enter")
    assert page.locator('[data-table="suggestion"]').is_visible()
    assert "resources:" in page.locator("pre").first.inner_text()
    watched.check_clean()


def test_a_namespace_limited_token_cannot_open_another_namespaces_job(
    browser, settings, history, make_token
):
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with LiveServer(settings) as server:
        context = browser.new_context()
        watched = Watched(context.new_page(), server.base)
        watched.open("/ui/jobs/bob-1")
        assert "/ui/sign-in" in watched.page.url
        watched.page.get_by_label("API token").fill(ml)
        with watched.page.expect_navigation():
            watched.page.get_by_label("API token").press("Enter")
        assert watched.page.locator("h1").inner_text() == "No such job"
        watched.open("/ui/jobs/hand-1")
        assert watched.page.locator("h1").inner_text().startswith("resnet")
        cookie = next(c for c in context.cookies() if c["name"] == "brain_console")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert watched.page.evaluate("document.cookie") == ""
        with watched.page.expect_navigation():
            watched.page.get_by_role("button", name="Sign out").click()
        assert "/ui/sign-in" in watched.page.url
        context.close()


def test_a_namespace_limited_token_follows_the_overview_to_its_namespaces_totals(
    browser, settings, history, make_token
):
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with LiveServer(settings.model_copy(update=PRICES)) as server:
        context = browser.new_context()
        watched = Watched(context.new_page(), server.base)
        watched.open("/ui/")
        watched.page.get_by_label("API token").fill(ml)
        with watched.page.expect_navigation():
            watched.page.get_by_label("API token").press("Enter")
        assert watched.page.locator('[data-table="week"]').count() == 0
        with watched.page.expect_navigation():
            watched.page.get_by_role("link", name="ml", exact=True).click()
        watched.page.wait_for_load_state("networkidle")
        assert watched.page.url.endswith("/ui/?namespace=ml")
        # ml's 24 core-hours requested at $0.05, its GiB- and GPU-hours: $16.55 in all.
        cpu = watched.page.locator('[data-table="week"] tr[data-resource="cpu"] td').first
        assert cpu.inner_text() == "24.0"
        assert "requested $16.55" in watched.page.locator('[data-cost="week"]').inner_text()
        wasters = watched.page.locator('[data-table="wasters"] tbody th')
        assert wasters.all_inner_texts() == ["alice"]
        watched.check_clean()
        context.close()


# Node roles come from whoever pushes samples: markup in them must stay text.
INJECTED_ROLES = [
    "</script><meta http-equiv=refresh content=0;url=//127.0.0.1:9/x>",
    "</script><form id=injected action=//127.0.0.1:9/f><input name=q>",
]


def test_markup_in_pushed_node_roles_neither_navigates_nor_enters_the_page(watched, live):
    start = recent_hour()
    body = job_body(name="inject", status="running", started_at=start.isoformat())
    assert httpx.put(f"{live.base}/api/v1/jobs/inject", json=body).status_code == 201
    points = [
        {"name": f"inject-{n}", "role": role, "index": 0, "cpu": 1.0, "memory_mib": 1024.0,
         "ts": (start + timedelta(minutes=minute)).isoformat()}
        for n, role in enumerate(INJECTED_ROLES)
        for minute in (0, 1, 2)
    ]  # fmt: skip
    pushed = httpx.post(f"{live.base}/api/v1/jobs/inject/samples", json={"nodes": points})
    assert pushed.status_code == 200, pushed.text

    watched.open("/ui/jobs/inject")
    url = watched.page.url
    # A meta refresh of 0 s would have left by now.
    watched.page.wait_for_timeout(1500)
    assert watched.page.url == url == f"{live.base}/ui/jobs/inject"
    injected = watched.page.evaluate(
        """() => [...document.querySelectorAll('meta[http-equiv], form#injected, input[name=q]')]
              .map(e => e.outerHTML)"""
    )
    assert injected == []
    # The data is shown as text: each role in the roles table and on its charts.
    shown = watched.page.locator('[data-table="roles"] tbody th').all_inner_texts()
    assert sorted(shown) == sorted(INJECTED_ROLES)
    # CPU and memory for each of the two roles (no GPUs, no speed).
    assert watched.page.locator("#charts-root").get_attribute("data-drawn") == "4"
    captions = watched.page.locator("#charts-root figcaption").all_inner_texts()
    assert all(any(role in c for c in captions) for role in INJECTED_ROLES)
    watched.check_clean()


def iso(monday: datetime) -> str:
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def weekly_runs(session) -> list:
    """carol's runs in namespace vision, one a week for ten weeks (the newest a day ago):
    2 hours on 8 cores using 1 to 4 of them, an a100 at 20 % to 80 %; weeks 2 and 5 back
    have an OOM kill."""
    runs = []
    for week in range(10):
        start = (utcnow() - timedelta(weeks=week, days=1)).replace(minute=0, microsecond=0)
        run = flat_job(
            session,
            f"carol-{week}",
            start=start,
            cpu_request=8,
            cpu_used=1 + week % 4,
            hours=2,
            gpu=1,
            gpu_util=0.2 + 0.2 * (week % 4),
            gpu_type="a100",
            user="carol",
            name="vit",
            namespace="vision",
        )
        if week in (2, 5):
            add_event(session, run, start + timedelta(hours=1), "oom", "worker-0")
        summarize_job(session, run)
        runs.append(run)
    session.commit()
    return runs


def test_trends_are_drawn_by_the_server_and_follow_the_window(watched, live, session):
    runs = weekly_runs(session)
    page = watched.page
    watched.open("/ui/namespaces/vision?days=90")
    # Charts with accessible names: the hours, efficiency, OOM kills and dollars.
    names = page.locator("svg.trend").evaluate_all(
        "s => s.map(e => e.getAttribute('aria-labelledby').split(' ')"
        ".map(id => document.getElementById(id).textContent)[0])"
    )
    assert [n.split(",")[0] for n in names] == [
        "GPU-hours: used and wasted",
        "Core-hours: used and wasted",
        "GiB-hours: used and wasted",
        "Efficiency (mean of used ÷ requested",
        "OOM kills",
        "Cost at the configured prices: used and wasted",
    ]
    cpu = page.get_by_role("img", name=re.compile("^Core-hours: used and wasted"))
    assert cpu.is_visible() and cpu.bounding_box()["width"] > 250
    # Ten weeks with a run: a used and a wasted bar each; two OOM bars.
    assert cpu.locator("rect").count() == 20
    assert page.locator("#trend-oom rect").count() == 2
    rows = page.locator('[data-table="trend"] tbody tr')
    jobs = [int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()]
    assert sum(jobs) == 10 and set(jobs) == {0, 1}
    # The newest run's week (the one it ended in): 16 core-hours asked, 1 × 2 used: 14
    # wasted.
    newest = week_start(runs[0].finished_at)
    row = page.locator(f'[data-table="trend"] tr[data-week="{iso(newest)}"] td')
    # And its a100 at 20 %: 2 GPU-hours asked, 0.4 used, 1.6 wasted.
    assert row.all_inner_texts()[:3] == ["1", "1.6", "14.0"]
    if SCREENSHOTS:
        page.screenshot(path=f"{SCREENSHOTS}/console-namespace.png", full_page=True)

    # The window: 30 days from a link, then a custom from/to typed in the form.
    with page.expect_navigation():
        page.get_by_role("link", name="30 days").click()
    assert "days=30" in page.url
    assert sum(int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()) == 5
    first = (utcnow() - timedelta(weeks=3, days=2)).date()
    page.get_by_label("from", exact=True).fill(first.isoformat())
    page.get_by_label("to", exact=True).fill((utcnow() - timedelta(days=2)).date().isoformat())
    with page.expect_navigation():
        page.get_by_label("to", exact=True).press("Enter")
    assert f"from={first.isoformat()}" in page.url
    # Runs 1, 2 and 3 weeks back ended inside it; the newest (a day ago) did not.
    assert sum(int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()) == 3
    opening = datetime(first.year, first.month, first.day, tzinfo=UTC)
    assert rows.first.get_attribute("data-week") == iso(week_start(opening))

    watched.open("/ui/users/carol?namespace=vision&days=90")
    if SCREENSHOTS:
        page.locator('section[aria-labelledby="trends"]').screenshot(
            path=f"{SCREENSHOTS}/console-trends.png"
        )
    # A user's page takes the same window: from/to typed in its form, the namespace kept.
    page.get_by_label("from", exact=True).fill(first.isoformat())
    page.get_by_label("to", exact=True).fill((utcnow() - timedelta(days=2)).date().isoformat())
    with page.expect_navigation():
        page.get_by_label("to", exact=True).press("Enter")
    assert "namespace=vision" in page.url and f"from={first.isoformat()}" in page.url
    assert page.locator('[data-metric="jobs"]').inner_text() == "3"
    assert sum(int(t) for t in rows.locator("td:nth-child(2)").all_inner_texts()) == 3
    watched.check_clean()
