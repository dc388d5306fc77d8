"""/metrics between tenants: every per-tenant series is labelled with its namespace, one
namespace's runs change no series of another, and BRAIN_METRICS_TENANT_SERIES decides
who reads them.

Each job is one node asking ``cpu_request`` cores for 1 h and using ``cpu_used``
(``flat_job``): its waste is the difference in core-hours.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from brain.summaries import summarize_job
from tests.builders import bearer, flat_job, recent_hour, token_secret
from tests.builders.tenancy import A, B
from tests.console.test_metrics import scrape

approx = pytest.approx
TENANT_PREFIXES = ("brain_namespace_", "brain_user_", "brain_group_")


def _job(session, uid, namespace, user, cpu_request, cpu_used):
    job = flat_job(
        session,
        uid,
        start=recent_hour(),
        cpu_request=cpu_request,
        cpu_used=cpu_used,
        namespace=namespace,
        user=user,
        name="ctr",
    )
    summarize_job(session, job)
    session.commit()


def _tenant_series(metrics: dict) -> dict:
    return {name: s for name, s in metrics.items() if name.startswith(TENANT_PREFIXES)}


def _of_namespace(metrics: dict, namespace: str) -> dict:
    """Every tenant series labelled ``namespace``."""
    return {
        (name, labels): value
        for name, series in _tenant_series(metrics).items()
        for labels, value in series.items()
        if dict(labels)["namespace"] == namespace
    }


@pytest.fixture
def scraper(settings):
    """A scrape of an app with the given settings, read anew every time."""

    def scrape_with(headers=None, **update):
        changed = settings.model_copy(update={"metrics_cache_s": 0, **update})
        with TestClient(create_app(changed)) as client:
            response = client.get("/metrics", headers=headers or {})
            assert response.status_code == 200, response.text
            return scrape(_Fixed(response.text))

    return scrape_with


class _Fixed:
    """A client whose /metrics answer is already read (``scrape`` parses it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def get(self, _path: str):
        return self


def test_every_tenant_series_is_labelled_with_its_namespace(session, scraper):
    # bob of team-b wastes 8 - 2 = 6 core-hours; bob of team-a 3 - 1 = 2: two owners.
    _job(session, "b1", B, "bob", 8, 2)
    _job(session, "a1", A, "bob", 3, 1)
    metrics = scraper()
    for name, series in _tenant_series(metrics).items():
        assert all("namespace" in dict(labels) for labels in series), name
    waste = metrics["brain_user_waste_core_hours"]
    assert waste[(("namespace", B), ("user", "bob"))] == approx(6)
    assert waste[(("namespace", A), ("user", "bob"))] == approx(2)
    groups = metrics["brain_group_jobs"]
    assert groups[(("group", "bob/ctr"), ("namespace", B))] == 1
    assert metrics["brain_namespace_jobs"][(("namespace", B),)] == 1


def test_another_namespaces_runs_change_none_of_my_series(session, scraper):
    """B has two users, one series of its own each (BRAIN_METRICS_OWNER_SERIES=2). A then
    runs jobs under B's user names and a dozen users wasting far more: B's series stay
    exactly as they were (no sum across namespaces, none of B's owners pushed into an
    (other) by A's)."""
    _job(session, "b1", B, "bob", 8, 2)
    _job(session, "b2", B, "carol", 4, 3)
    before = _of_namespace(scraper(metrics_owner_series=2), B)
    assert before[("brain_user_jobs", (("namespace", B), ("user", "bob")))] == 1
    for i in range(12):
        _job(session, f"a{i}", A, ["bob", "carol"][i % 2] if i < 2 else f"u{i}", 64, 0)
    after = scraper(metrics_owner_series=2)
    assert _of_namespace(after, B) == before
    # A's own owners are bounded within A: all waste 64 core-hours, so the first two by
    # name keep series of their own and the other ten add up in A's (other).
    a_users = {
        dict(labels)["user"]: value
        for labels, value in after["brain_user_jobs"].items()
        if ("namespace", A) in labels
    }
    assert a_users == {"bob": 1, "carol": 1, "(other)": 10}


def test_the_tenant_series_setting_and_the_token_decide_who_reads_them(
    session, scraper, db, settings
):
    _job(session, "b1", B, "bob", 8, 2)
    _job(session, "a1", A, "ann", 3, 1)
    everyone = scraper()
    assert {dict(labels)["namespace"] for labels in everyone["brain_namespace_jobs"]} == {A, B}

    # none: no tenant family at all; the service's own metrics stay.
    hidden = scraper(metrics_tenant_series="none")
    assert _tenant_series(hidden) == {}
    assert hidden["brain_portrait_metrics_up"] == {(): 1.0}
    assert hidden["brain_portrait_window_days"] == {(): 7.0}

    # token: nothing without a token once tokens exist; a team's token reads its own
    # namespace's series only; a token for every namespace reads them all.
    b_token = bearer(token_secret(db, "team-b", "read", [B]))
    admin = bearer(token_secret(db, "admin", "admin"))
    assert _tenant_series(scraper(metrics_tenant_series="token")) == {}
    mine = scraper(b_token, metrics_tenant_series="token")
    assert _of_namespace(mine, B) == _of_namespace(everyone, B)
    assert _of_namespace(mine, A) == {}
    assert _tenant_series(scraper(admin, metrics_tenant_series="token")) == _tenant_series(everyone)
    # A token that is no token is refused, not read as none.
    changed = settings.model_copy(update={"metrics_tenant_series": "token"})
    with TestClient(create_app(changed)) as client:
        wrong = client.get("/metrics", headers=bearer("x" * 40))
    assert wrong.status_code == 401


def test_a_limited_token_reads_only_its_namespaces_on_a_protected_metrics_path(
    session, scraper, db
):
    """With /metrics out of BRAIN_AUTH_PUBLIC_PATHS a token is needed, and a token for
    team-b reads team-b's series whatever BRAIN_METRICS_TENANT_SERIES says."""
    _job(session, "b1", B, "bob", 8, 2)
    _job(session, "a1", A, "ann", 3, 1)
    b_token = bearer(token_secret(db, "team-b", "read", [B]))
    mine = scraper(b_token, auth_public_paths=["/healthz", "/readyz"])
    assert {dict(labels)["namespace"] for labels in mine["brain_namespace_jobs"]} == {B}
    assert _of_namespace(mine, A) == {}
