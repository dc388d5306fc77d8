"""Recommended against current on the job, user and group pages, in a real browser.

The history is tests/console/conftest.py's, at tests/console/test_cost.py's prices
($0.05 a core-hour, $0.01 a GiB-hour). The suggestion for alice's resnet on imagenet
rests on hand-1, flat-a and flat-b (same user and dataset); the startup optimizer sizes
the ps at hand-1's ps peak, 3 cores and 6144 MiB × 1.2 = 7373 MiB, and the worker at
the largest worker usage of those runs, hand-1's 8 cores and 8192 MiB."""

from __future__ import annotations

import httpx

from tests.console import test_browser as shared
from tests.console.test_browser import LiveServer, Watched

# The shared browser, and Brain served at test_cost's prices, of the browser tests.
browser, live, watched = shared.browser, shared.live, shared.watched

ADVICE = '[data-advice="{uid}"] [data-table="advice"] tr[data-role="{role}"] td'
COLUMNS = ["nodes", "cpu", "memory", "gpu", "saves", "risk"]
# hand-1's ps: 4 cores, 8 GiB asked; used cpu mean 2, peak 3; memory mean 4, peak 6 GiB.
# Saves 4 − 3 = 1 core and 8192 − 7373 = 819 MiB (0.8 GiB): 24 h × (1 × $0.05 +
# 819 / 1024 × $0.01) = $1.39 a day.
HAND_PS = {
    "nodes": "1 → 1",
    "cpu": "4.00 / 2.00 / 3.00 → 3.00",
    "memory": "8.0 / 4.0 / 6.0 → 7.2",
    "gpu": "0.0 → same",
    "saves": "1.00 cores, 0.8 GiB, 0.0 GPUs, $1.39 a day",
    "risk": "OOM risk —; peak 83% of recommended",  # 6144 / 7373
}
# Two workers of 8 cores, 16 GiB; the suggestion keeps their count and cores and halves
# their memory: 2 × 8 GiB saved, 24 h × 16 × $0.01 = $3.84 a day; the peak fills it.
HAND_WORKER = {
    "nodes": "2 → 2",
    "cpu": "8.00 / 5.00 / 8.00 → 8.00",
    "memory": "16.0 / 5.3 / 8.0 → 8.0",
    "gpu": "1.0 → same",
    "saves": "0.00 cores, 16.0 GiB, 0.0 GPUs, $3.84 a day",
    "risk": "OOM risk —; peak 100% of recommended",
}
# flat-b (group alice/bert): 1 worker, 2 cores used flat, 1 GiB asked, 512 MiB used;
# sized at its own usage: saves 0.5 GiB, 24 h × 0.5 × $0.01 = $0.12 a day.
FLAT_B_WORKER = {
    "nodes": "1 → 1",
    "cpu": "2.00 / 2.00 / 2.00 → 2.00",
    "memory": "1.0 / 0.5 / 0.5 → 0.5",
    "gpu": "2.0 → same",
    "saves": "0.00 cores, 0.5 GiB, 0.0 GPUs, $0.12 a day",
    "risk": "OOM risk —; peak 100% of recommended",
}


def shown(page, uid: str, role: str) -> dict[str, str]:
    cells = page.locator(ADVICE.format(uid=uid, role=role)).all_inner_texts()
    return dict(zip(COLUMNS, cells, strict=True))


def test_the_job_page_sets_each_role_against_the_recommendation(watched, live):
    watched.open("/ui/jobs/hand-1")
    page = watched.page
    assert shown(page, "hand-1", "ps") == HAND_PS
    assert shown(page, "hand-1", "worker") == HAND_WORKER
    assert page.locator('[data-advice="hand-1"] [data-saves-usd]').inner_text() == "$5.23 a day"
    # The recommendation is the suggestion service's answer for the same run.
    api = httpx.get(
        f"{live.base}/api/v1/suggestions",
        params={"user": "alice", "name": "resnet", "dataset": "imagenet"},
    ).json()
    sizes = {r["role"]: (r["cpu_request"], r["memory_mib"]) for r in api["roles"]}
    assert sizes == {"ps": (3.0, 7373.0), "worker": (8.0, 8192.0)}
    assert (
        f"Confidence {api['basis']['confidence']}"
        in page.locator('[data-advice="hand-1"] [data-confidence]').inner_text()
    )
    # Its link opens the suggestion page on the same query, with the YAML to paste.
    with page.expect_navigation():
        page.locator('[data-advice="hand-1"] [data-suggest-link]').click()
    assert page.url.endswith("/ui/suggest?user=alice&name=resnet&dataset=imagenet")
    assert "memory: 7373Mi" in page.locator("#resources-ps").inner_text()
    watched.check_clean()


def test_the_user_page_advises_on_each_kind_of_run(watched):
    watched.open("/ui/users/alice")
    page = watched.page
    # flat-a is a resnet on imagenet too: one advice for both, on the more wasteful hand-1.
    advised = page.locator("[data-advice]").evaluate_all("a => a.map(x => x.dataset.advice)")
    assert advised == ["flat-b", "hand-1"]
    assert shown(page, "hand-1", "ps") == HAND_PS
    assert shown(page, "hand-1", "worker") == HAND_WORKER
    assert shown(page, "flat-b", "worker") == FLAT_B_WORKER
    links = page.locator("[data-suggest-link]").evaluate_all("a => a.map(x => x.href)")
    assert [link.split("/ui/suggest?")[1] for link in links] == [
        "user=alice&name=bert&dataset=imagenet&gpu_type=a100",
        "user=alice&name=resnet&dataset=imagenet",
    ]
    watched.check_clean()


def test_the_group_page_advises_on_its_runs(watched):
    watched.open("/ui/groups/alice/bert")
    page = watched.page
    assert page.locator("[data-advice]").count() == 1
    assert shown(page, "flat-b", "worker") == FLAT_B_WORKER
    assert page.locator("[data-saves-usd]").inner_text() == "$0.12 a day"
    watched.check_clean()


def test_a_namespace_limited_token_is_told_why_there_is_no_advice(
    browser, settings, history, make_token
):
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with LiveServer(settings) as server:
        context = browser.new_context()
        watched = Watched(context.new_page(), server.base)
        watched.open("/ui/jobs/hand-1")
        watched.page.get_by_label("API token").fill(ml)
        with watched.page.expect_navigation():
            watched.page.get_by_label("API token").press("Enter")
        assert watched.page.locator("h1").inner_text().startswith("resnet")
        assert watched.page.locator("[data-advice]").count() == 0
        assert "namespace-limited token" in watched.page.locator("#advice + p").inner_text()
        context.close()
