"""Every namespace a page names links to its namespace page, where the reader may open it.

The history fixture: hand-1, flat-a and flat-b in namespace ml (alice's), bob-1 in ads."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from api.app import create_app
from api.console.session import COOKIE


def namespace_links(html: str) -> list[str]:
    return re.findall(r'href="/ui/namespaces/([^"]+)"', html)


def heading(html: str) -> str:
    return re.search(r"<h1>(.*?)</h1>", html, re.S).group(1)


def test_pages_link_the_namespaces_they_name(client, history):
    job = client.get("/ui/jobs/hand-1").text
    assert 'namespace <a href="/ui/namespaces/ml">ml</a>' in job

    listed = client.get("/ui/jobs", params={"sort": "newest"}).text
    # One link per row: three jobs in ml, one in ads; the heading names no filter.
    assert sorted(namespace_links(listed)) == ["ads", "ml", "ml", "ml"]
    assert heading(listed) == "Jobs"
    filtered = client.get("/ui/jobs", params={"namespace": "ads"}).text
    assert namespace_links(heading(filtered)) == ["ads"]
    # A filter that is no namespace name has no page to link to.
    odd = client.get("/ui/jobs", params={"namespace": "Not_A_Namespace"}).text
    assert heading(odd) == "Jobs"

    for path in ("/ui/users/alice", "/ui/groups/alice/bert"):
        owner = client.get(path, params={"namespace": "ml"}).text
        assert namespace_links(heading(owner)) == ["ml"], path
        assert namespace_links(heading(client.get(path).text)) == [], path

    overview = client.get("/ui/", params={"namespace": "ads"}).text
    assert 'in namespace <a data-namespace="ads" href="/ui/namespaces/ads">ads</a>' in overview


def test_a_limited_token_sees_links_to_its_namespaces_only(settings, history, make_token):
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with TestClient(create_app(settings)) as client:
        client.cookies.set(COOKIE, ml, path="/ui/")
        # The header names the token's namespaces, each a link.
        jobs = client.get("/ui/jobs").text
        header = re.search(r'<div class="who">(.*?)</div>', jobs, re.S).group(1)
        assert namespace_links(header) == ["ml"]
        assert sorted(namespace_links(jobs)) == ["ml"] * 4  # the header and three rows
        # Filtering on a namespace it does not read lists nothing and links nowhere.
        other = client.get("/ui/jobs", params={"namespace": "ads"}).text
        assert 'data-total="0"' in other and "/ui/namespaces/ads" not in other
        assert heading(other) == "Jobs"
        mine = client.get("/ui/jobs", params={"namespace": "ml"}).text
        assert namespace_links(heading(mine)) == ["ml"]
