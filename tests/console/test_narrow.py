"""Narrow windows: wide tables scroll inside their own box, the page itself does not
scroll sideways past its header."""

from __future__ import annotations

from tests.console import test_browser as shared

# The shared browser, and Brain served at test_cost's prices, of the browser tests.
browser, live = shared.browser, shared.live

NARROW_PX = 600
PAGES = [
    "/ui/",
    "/ui/jobs",
    "/ui/jobs/hand-1",
    "/ui/users/alice",
    "/ui/groups/alice/bert",
    "/ui/suggest?user=alice&name=resnet",
]


def test_at_600_px_no_page_overflows_sideways(browser, live):
    context = browser.new_context(viewport={"width": NARROW_PX, "height": 900})
    page = context.new_page()
    try:
        for path in PAGES:
            page.goto(live.base + path)
            page.wait_for_load_state("networkidle")
            width = page.evaluate("document.documentElement.scrollWidth")
            header = page.evaluate("document.querySelector('header, nav').scrollWidth")
            assert width <= NARROW_PX, (path, width)
            assert header <= NARROW_PX, (path, header)
            # The wide tables still show all their columns: inside a box that scrolls.
            boxes = page.evaluate(
                """() => [...document.querySelectorAll('.scroll')]
                      .filter(b => b.scrollWidth > b.clientWidth).length"""
            )
            if path in ("/ui/jobs/hand-1", "/ui/jobs"):
                assert boxes > 0, path
    finally:
        context.close()
