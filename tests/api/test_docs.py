"""/docs and /redoc work offline: every asset they load is served by Brain itself."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_documentation_pages_load_only_local_assets(client, page):
    html = client.get(page)
    assert html.status_code == 200
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts, html.text  # the page does load a script bundle...
    for asset in assets:
        assert asset.startswith("/"), f"{page} loads {asset} from elsewhere"
        response = client.get(asset)  # ...and Brain serves every asset itself
        assert response.status_code == 200, asset
        assert len(response.content) > 0
