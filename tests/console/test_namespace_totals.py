"""Totals and dollars of one namespace: rankings, owner portraits and the console's
overview take ``namespace``, and a namespace-limited token reads them for its own.

The history fixture: namespace ml holds hand-1 (16 core-hours, 32 GiB-hours, 1.5
GPU-hours requested: $4.12), flat-a ($0.21) and flat-b ($12.22), all alice's; namespace
ads holds bob-1, 8 cores for an hour with 1 GiB (requested 8 x 0.05 + 1 x 0.01 = $0.41,
used 2 x 0.05 + 0.5 x 0.01 = $0.105)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.console.session import COOKIE
from tests.console.test_cost import PRICES
from tests.console.test_pages import cells, numbers

approx = pytest.approx


@pytest.fixture
def priced_app(settings):
    return create_app(settings.model_copy(update=PRICES))


def test_a_ranking_of_one_namespace_counts_its_jobs_and_dollars_only(priced_app, history):
    with TestClient(priced_app) as client:
        ranking = client.get("/api/v1/portraits", params={"by": "user", "namespace": "ads"})
        assert ranking.status_code == 200
        body = ranking.json()
        assert [row["key"] for row in body["items"]] == ["bob"] and body["total"] == 1
        totals = body["items"][0]["totals"]
        assert totals["hours"]["cpu"]["requested_core_hours"] == approx(8)
        assert totals["cost"]["requested_usd"] == approx(0.41)
        # The jobs without a GPU type: in ads bob-1 alone, not ml's hand-1 and flat-a too.
        by_type = client.get("/api/v1/portraits", params={"by": "gpu_type", "namespace": "ads"})
        rows = by_type.json()["items"]
        assert [(r["key"], r["totals"]["cost"]["requested_usd"]) for r in rows] == [
            (None, approx(0.41))
        ]
        empty = client.get("/api/v1/portraits", params={"namespace": "nobody"}).json()
        assert (empty["items"], empty["total"]) == ([], 0)


def test_an_owner_portrait_of_one_namespace_prices_its_jobs_only(priced_app, history):
    with TestClient(priced_app) as client:
        # alice has no job in ads: no hours and no dollars there (her $16.55 are ml's).
        ads = client.get("/api/v1/portraits/users/alice", params={"namespace": "ads"}).json()
        assert ads["totals"]["jobs"] == 0
        assert ads["totals"]["cost"]["requested_usd"] == approx(0)
        ml = client.get("/api/v1/portraits/users/alice", params={"namespace": "ml"}).json()
        assert ml["totals"]["cost"]["requested_usd"] == approx(4.12 + 0.21 + 12.22)


def test_a_namespace_limited_token_ranks_its_own_namespaces_only(priced_app, history, make_token):
    ml = {"Authorization": f"Bearer {make_token('ml-reader', 'read', namespaces=['ml'])}"}
    with TestClient(priced_app) as client:
        mine = client.get("/api/v1/portraits", params={"namespace": "ml"}, headers=ml)
        assert mine.status_code == 200
        assert [row["key"] for row in mine.json()["items"]] == ["alice"]
        for params in ({}, {"namespace": "ads"}, {"namespace": "nobody"}):
            refused = client.get("/api/v1/portraits", params=params, headers=ml)
            assert refused.status_code == 403, params
            assert "bob" not in refused.text and "0.41" not in refused.text


def test_the_overview_of_one_namespace_totals_and_prices_its_jobs(priced_app, history):
    with TestClient(priced_app) as client:
        html = unescape(client.get("/ui/", params={"namespace": "ads"}).text)
        assert 'data-namespace="ads"' in html
        # requested, used, waste core-hours of bob-1 alone
        assert numbers(cells(html, 'data-resource="cpu"'))[:3] == ["8.0", "2.0", "6.0"]
        cost = client.get("/api/v1/portraits", params={"namespace": "ads"}).json()
        cost = cost["items"][0]["totals"]["cost"]
        assert cost["requested_usd"] == approx(0.41) and cost["used_usd"] == approx(0.105)
        assert (
            f"requested ${cost['requested_usd']:.2f}, used ${cost['used_usd']:.2f}, "
            f"<strong>wasted ${cost['waste_usd']:.2f}</strong>"
        ) in html
        wasters = re.findall(r'<a href="/ui/users/([^"]+)">', html)
        assert wasters == ["bob?namespace=ads"]
        # Every namespace: ml's 24 core-hours requested as well.
        whole = unescape(client.get("/ui/").text)
        assert numbers(cells(whole, 'data-resource="cpu"'))[0] == "32.0"
        assert "requested $16.96" in whole  # 16.55 + 0.41


def test_a_namespace_limited_token_sees_its_namespaces_totals_on_the_console(
    priced_app, history, make_token
):
    make_token("admin", "admin")
    ml = make_token("ml-reader", "read", namespaces=["ml"])
    with TestClient(priced_app) as client:
        client.cookies.set(COOKIE, ml, path="/ui/")
        plain = client.get("/ui/").text
        assert 'data-table="week"' not in plain
        assert '<a href="/ui/?namespace=ml">ml</a>' in plain
        mine = unescape(client.get("/ui/", params={"namespace": "ml"}).text)
        assert numbers(cells(mine, 'data-resource="cpu"'))[0] == "24.0"
        assert "requested $16.55" in mine and "bob" not in mine
        other = client.get("/ui/", params={"namespace": "ads"})
        assert other.status_code == 403 and "bob" not in other.text and "0.41" not in other.text
        owner = client.get("/ui/users/alice", params={"namespace": "ml"})
        assert owner.status_code == 200
        assert 'in namespace <a href="/ui/namespaces/ml">ml</a>' in owner.text
        assert client.get("/ui/users/bob", params={"namespace": "ads"}).status_code == 403
