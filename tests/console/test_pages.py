"""The console's pages over the API's numbers (server side; the browser tests drive them)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.console.pages import router
from api.console.session import COOKIE

# The test client's own origin (its base URL), as a browser names it posting a form.
SAME_ORIGIN = "http://testserver"


def cells(html: str, attribute: str) -> str:
    """The HTML of the first table row carrying ``attribute`` (e.g. data-resource="cpu")."""
    match = re.search(rf"<tr {attribute}>(.*?)</tr>", html, re.S)
    assert match, attribute
    return match.group(1)


def numbers(row_html: str) -> list[str]:
    return re.findall(r"<td>([^<]*)</td>", row_html)


def test_root_and_bare_prefix_lead_to_the_console(client):
    assert client.get("/", follow_redirects=False).headers["location"] == "/ui/"
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"


def test_job_page_shows_the_portraits_numbers(client, history):
    api = client.get("/api/v1/portraits/jobs/hand-1").json()["summary"]["hours"]
    html = client.get("/ui/jobs/hand-1").text

    # Hand numbers: 16 core-hours requested, 9.5 used, 6.5 wasted; efficiency 59%.
    assert numbers(cells(html, 'data-resource="cpu"')) == ["16.00", "9.50", "6.50", "59%"]
    assert api["cpu"]["requested_core_hours"] == pytest.approx(16)
    gpu = numbers(cells(html, 'data-resource="gpu"'))
    assert gpu[1] == f"{api['gpu']['used_gpu_hours']:.2f}" == "0.75"
    # The plan timeline, the ScalePlan YAML and the marked OOM.
    assert 'data-plan="1"' in html and "kind: ScalePlan" in html
    assert '"kind": "oom"' in html and '"role": "worker"' in html


def test_jobs_list_filters_sorts_and_pages(client, history):
    by_gpu_waste = client.get("/ui/jobs", params={"sort": "gpu_waste"}).text
    uids = re.findall(r'<tr data-uid="([^"]+)"', by_gpu_waste)
    # flat-b wastes 2 GPUs × 2 h × 0.75 = 3 GPU-hours; hand-1 1.5 - 0.75 = 0.75; others 0.
    assert uids[:2] == ["flat-b", "hand-1"]

    least_efficient = client.get("/ui/jobs", params={"sort": "efficiency"}).text
    # bob-1: CPU 2/8 = 0.25 and memory 0.5: score 0.375, the lowest.
    assert re.findall(r'<tr data-uid="([^"]+)"', least_efficient)[0] == "bob-1"

    filtered = client.get("/ui/jobs", params={"namespace": "ml", "gpu_type": "a100"}).text
    assert re.findall(r'<tr data-uid="([^"]+)"', filtered) == ["flat-b"]
    assert 'data-total="1"' in filtered

    bad = client.get("/ui/jobs", params={"status": "exploded", "sort": "loudest"}).text
    assert "status 'exploded' is not one of the job statuses" in unescape(bad)
    assert 'data-total="4"' in bad


def test_jobs_list_shows_when_each_run_started(client, history, session):
    from api.console.pages import format_time
    from tests.builders import make_job, recent_hour

    make_job(session, "queued", start=recent_hour(), status="pending", started=False)
    session.commit()
    html = client.get("/ui/jobs").text
    started = dict(
        re.findall(r'<tr data-uid="([^"]+)".*?<td data-started>([^<]*)</td>', html, re.S)
    )
    # flat-a was registered just now (created_at) for a run that started days ago.
    assert (
        started["flat-a"]
        == format_time(history[1].started_at)
        != format_time(history[1].created_at)
    )
    assert started["queued"] == "not yet"
    assert '<th scope="col">Started</th>' in html


def test_jobs_list_pages_of_fifty(client, session):
    from tests.builders import make_job, recent_hour

    for i in range(51):
        make_job(session, f"j-{i:02d}", start=recent_hour(), status="running")
    session.commit()
    first = client.get("/ui/jobs").text
    second = client.get("/ui/jobs", params={"page": 2}).text
    assert len(re.findall(r"<tr data-uid=", first)) == 50
    assert re.findall(r'<tr data-uid="([^"]+)"', second) == ["j-00"]
    assert 'rel="next"' in first and 'rel="prev"' in second


def test_user_page_matches_the_user_portrait(client, history):
    api = client.get("/api/v1/portraits/users/alice").json()
    html = client.get("/ui/users/alice").text
    jobs = re.search(r'data-metric="jobs">(\d+)<', html).group(1)
    assert int(jobs) == api["totals"]["jobs"] == 3
    waste = re.search(r'data-metric="gpu-waste">([^<]+)<', html).group(1)
    assert waste == f"{api['totals']['hours']['gpu']['waste_gpu_hours']:,.1f}" == "3.8"
    assert api["priority"]["reason"] in unescape(html)
    assert re.findall(r'<tr data-uid="([^"]+)"', html)[0] == "flat-b"


def test_group_page_takes_a_key_with_a_slash(client, history):
    html = client.get("/ui/groups/alice/bert").text
    assert re.search(r'data-metric="jobs">1<', html)


def test_suggestion_page_gives_the_resources_block(client, history):
    html = client.get("/ui/suggest", params={"user": "alice", "name": "resnet"}).text
    api = client.get("/api/v1/suggestions", params={"user": "alice", "name": "resnet"}).json()
    assert 'data-table="suggestion"' in html
    assert f'data-confidence="{api["basis"]["confidence"]}"' in html
    worker = next(r for r in api["roles"] if r["role"] == "worker")
    assert f"memory: {round(worker['memory_mib'])}Mi" in html
    assert "resources:" in html

    empty = client.get("/ui/suggest", params={"gpu_type": "a100"}).text
    assert "Give at least one of user, name or dataset." in empty


def test_optimizers_page_lists_each_with_defaults(client):
    names = [o["name"] for o in client.get("/api/v1/optimizers").json()]
    html = client.get("/ui/optimizers").text
    assert re.findall(r'data-optimizer="([^"]+)"', html) == names
    # what each declares: hot_ps migrates PS nodes in the running stage by default;
    # learned_peak sets any role's group and runs only when asked
    hot_ps = html.split('data-optimizer="hot_ps"')[1].split("</section>")[0]
    assert "Runs by default at: running</p>" in hot_ps
    assert "Sets the groups of: none. Migrates nodes of: ps." in hot_ps
    peak = html.split('data-optimizer="learned_peak"')[1].split("</section>")[0]
    assert "Runs by default at: none (only when configured or requested)" in peak
    assert "Sets the groups of: every role. Migrates nodes of: none." in peak


def test_optimizers_page_renders_literals_and_folds_the_details(client):
    html = client.get("/ui/optimizers").text
    # Docstrings write code as ``name``: shown as code, never as raw markup.
    assert "``" not in html
    startup = html.split('data-optimizer="startup"')[1].split("</section>")[0]
    assert "Sizes the PS and the chief of a new job" in startup.split("<details>")[0]
    # What follows the summary line, and the settings, wait behind one click.
    details = startup.split("<details>")[1]
    assert details.startswith("\n  <summary>How it decides, and its ")
    assert "<table" in details and "<table" not in startup.split("<details>")[0]
    estimate = html.split('data-optimizer="estimate"')[1].split("</section>")[0]
    assert "<code>optimizers.allreduce_estimate</code>" in estimate
    assert "<code>ready_after_s</code>" in estimate


def test_overview_counts_and_the_weeks_totals(client, history, session):
    from tests.builders import make_job, recent_hour

    make_job(session, "live", start=recent_hour(), status="running")
    make_job(session, "queued", start=recent_hour(), status="pending", started=False)
    session.commit()
    html = client.get("/ui/").text
    assert re.search(r'data-metric="running"><a [^>]*>1<', html)
    assert re.search(r'data-metric="pending"><a [^>]*>1<', html)
    ranking = client.get("/api/v1/portraits", params={"by": "user", "days": 7}).json()
    requested = sum(r["totals"]["hours"]["cpu"]["requested_core_hours"] for r in ranking["items"])
    assert numbers(cells(html, 'data-resource="cpu"'))[0] == f"{requested:,.1f}"


def test_overview_tells_running_jobs_from_ended_ones(client, history, session):
    """As after `brain summarize`: running jobs have snapshot summaries in the window.
    dave's only job has just started (one sample): nothing measured, nothing wasted."""
    from brain.summaries import summarize_job
    from tests.builders import add_node, add_points, flat_job, make_job, recent_hour

    t0 = recent_hour(days_ago=1)
    running = flat_job(session, "carol-1", start=t0, cpu_request=4, cpu_used=1, user="carol")
    running.status, running.finished_at = "running", None
    just_started = make_job(session, "dave-1", start=t0, user="dave", status="running")
    add_node(session, just_started, "worker-0", "worker", created_at=t0, cpu=8, memory_mib=4096)
    add_points(
        session, just_started, "worker-0", "worker", [{"ts": t0, "cpu": 2, "memory_mib": 1024}]
    )
    for job in (running, just_started):
        summarize_job(session, job)
    session.commit()

    html = client.get("/ui/").text
    week = re.search(r'data-metric="week-jobs">([^<]*)<', html).group(1)
    # history: hand-1, flat-a, flat-b and bob-1 succeeded; carol-1 and dave-1 run.
    assert week == (
        "4 jobs ended (4 succeeded, 0 failed, 0 stopped); 2 still running, counted up to "
        "their latest sample."
    )
    wasters = html.split('data-table="wasters"')[1].split("</table>")[0]
    users = re.findall(r'<a href="/ui/users/([^"?]+)', wasters)
    # carol's running job wastes 4 - 1 = 3 core-hours so far; dave wasted nothing yet.
    assert "carol" in users and "dave" not in users


def test_unknown_job_is_a_404_page(client):
    response = client.get("/ui/jobs/nope")
    assert response.status_code == 404 and "No job with uid" in response.text


def test_assets_are_served_by_brain(client):
    assert client.get("/ui/static/uplot/uPlot.iife.min.js").status_code == 200
    assert "MIT" in client.get("/ui/static/uplot/LICENSE").text
    page = client.get("/ui/optimizers")
    assert not re.search(r'(src|href)="(https?:)?//', page.text)
    # And the browser is told to load nothing from elsewhere.
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "script-src 'self';" in page.headers["content-security-policy"]


# Sign-in with tokens


@pytest.fixture
def secured(client, make_token):
    """The test server is on loopback: a token existing makes it enforce tokens."""
    return {
        "admin": make_token("admin", "admin"),
        "ml": make_token("ml-reader", "read", namespaces=["ml"]),
    }


def test_pages_ask_to_sign_in_and_the_cookie_is_httponly_strict(client, history, secured):
    client.headers["origin"] = SAME_ORIGIN  # as a browser posting the sign-in form sends
    response = client.get("/ui/jobs/hand-1", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/sign-in?next=/ui/jobs/hand-1"

    refused = client.post("/ui/sign-in", data={"token": "brain_wrong", "next": "/ui/jobs"})
    assert refused.status_code == 401 and "unknown, expired or revoked" in refused.text

    signed = client.post(
        "/ui/sign-in",
        data={"token": secured["admin"], "next": "/ui/jobs/hand-1"},
        follow_redirects=False,
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/jobs/hand-1"
    cookie = signed.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=") and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie and "Path=/ui/" in cookie
    assert client.get("/ui/jobs/hand-1").status_code == 200

    client.post("/ui/sign-out")
    assert client.get("/ui/jobs/hand-1", follow_redirects=False).status_code == 303


def test_sign_in_never_sends_the_browser_off_the_console(client, secured):
    client.headers["origin"] = SAME_ORIGIN
    for target in ("https://evil.example/", "//evil.example/ui/", "/api/v1/jobs"):
        response = client.post(
            "/ui/sign-in", data={"token": secured["admin"], "next": target}, follow_redirects=False
        )
        assert response.headers["location"] == "/ui/"


def test_sign_in_and_out_refuse_posts_from_other_sites(client, history, secured):
    form = {"token": secured["admin"], "next": "/ui/jobs/hand-1"}
    foreign = [
        {"origin": "https://evil.example"},
        {"origin": "http://testserver.evil.example"},
        {"origin": "http://testserver:8080"},
        {"origin": "null"},
        {"referer": "https://evil.example/ui/sign-in"},
        {},  # neither header: no browser post looks so
    ]
    for headers in foreign:
        refused = client.post("/ui/sign-in", data=form, headers=headers, follow_redirects=False)
        assert refused.status_code == 403, headers
        assert "set-cookie" not in refused.headers and not client.cookies, headers
        assert "refused" in refused.text or "names no Origin" in refused.text
    assert client.get("/ui/jobs/hand-1", follow_redirects=False).status_code == 303

    # The console's own page: by Origin, by Referer alone, or HTTPS ended by a proxy.
    for headers in (
        {"origin": SAME_ORIGIN},
        {"referer": f"{SAME_ORIGIN}/ui/sign-in?next=/ui/"},
        {"origin": "https://testserver"},
    ):
        client.cookies.clear()
        signed = client.post("/ui/sign-in", data=form, headers=headers, follow_redirects=False)
        assert signed.status_code == 303, headers
        assert signed.headers["set-cookie"].startswith(f"{COOKIE}=")
    assert client.get("/ui/jobs/hand-1").status_code == 200

    # Another site cannot sign the visitor out either.
    out = client.post("/ui/sign-out", headers={"origin": "https://evil.example"})
    assert out.status_code == 403 and client.get("/ui/jobs/hand-1").status_code == 200
    out = client.post("/ui/sign-out", headers={"origin": SAME_ORIGIN}, follow_redirects=False)
    assert out.status_code == 303 and 'brain_console=""' in out.headers["set-cookie"]


def test_an_https_console_refuses_a_plain_http_origin(settings, secured):
    with TestClient(create_app(settings), base_url="https://testserver") as tls:
        form = {"token": secured["admin"]}
        down = tls.post("/ui/sign-in", data=form, headers={"origin": SAME_ORIGIN})
        assert down.status_code == 403
        same = tls.post(
            "/ui/sign-in",
            data=form,
            headers={"origin": "https://testserver"},
            follow_redirects=False,
        )
        assert same.status_code == 303 and "Secure" in same.headers["set-cookie"]


def test_namespace_limited_token_sees_only_its_namespaces(client, history, secured):
    client.cookies.set(COOKIE, secured["ml"], path="/ui/")
    assert client.get("/ui/jobs/hand-1").status_code == 200
    other = client.get("/ui/jobs/bob-1")
    # Exactly the page of a job that does not exist.
    missing = client.get("/ui/jobs/bob-2")
    assert other.status_code == missing.status_code == 404
    assert other.text == missing.text.replace("bob-2", "bob-1")
    listed = re.findall(r'<tr data-uid="([^"]+)"', client.get("/ui/jobs").text)
    assert sorted(listed) == ["flat-a", "flat-b", "hand-1"]
    assert client.get("/ui/users/bob").status_code == 403
    assert client.get("/ui/suggest", params={"user": "bob"}).status_code == 403
    overview = client.get("/ui/").text
    assert 'data-table="wasters"' not in overview


def test_the_console_changes_nothing(client, history):
    """Its only non-GET routes sign in and out; every other method is refused."""
    for path in ("/ui/", "/ui/jobs", "/ui/jobs/hand-1", "/ui/users/alice"):
        assert client.post(path).status_code == 405
    writes = {(r.path, m) for r in router.routes for m in r.methods if m not in ("GET", "HEAD")}
    assert writes == {("/ui/sign-in", "POST"), ("/ui/sign-out", "POST")}


def test_a_pod_leads_to_its_jobs_page(client, history):
    response = client.get("/ui/pods/ml/worker-1", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/jobs/hand-1?namespace=ml"
    assert client.get("/ui/pods/ads/worker-1").status_code == 404


def test_a_uid_in_two_namespaces_opens_with_its_namespace(client, history, session, secured):
    from tests.builders import make_job, recent_hour

    make_job(session, "hand-1", start=recent_hour(), namespace="ads", name="other-model")
    session.commit()
    client.cookies.set(COOKIE, secured["admin"], path="/ui/")
    which = client.get("/ui/jobs/hand-1")
    assert which.status_code == 409 and "ads, ml" in which.text
    assert "other-model" in client.get("/ui/jobs/hand-1?namespace=ads").text
    assert "resnet" in client.get("/ui/jobs/hand-1?namespace=ml").text
    listed = client.get("/ui/jobs", params={"namespace": "ads"}).text
    assert 'href="/ui/jobs/hand-1?namespace=ads"' in listed
    # The token limited to ml opens its own without naming it, and cannot name ads.
    client.cookies.set(COOKIE, secured["ml"], path="/ui/")
    assert "resnet" in client.get("/ui/jobs/hand-1").text
    assert client.get("/ui/jobs/hand-1?namespace=ads").status_code == 404
