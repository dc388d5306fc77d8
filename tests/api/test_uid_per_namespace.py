"""Job uids are unique per namespace: two namespaces each register ``same-uid`` and
each reads and writes only its own; no answer tells one that the other holds the uid.

The reproductions these replace: a PUT on another namespace's uid answered 201 and
stored nothing, so a GET then answered 404 (an existence oracle), and the first
namespace to register a uid kept it (the other's PUT was answered 201 yet stored
nothing, locking it out).
"""

from __future__ import annotations

import pytest

from tests.builders import bearer, job_body, node_point, token_secret
from tests.builders.tenancy import A, B

TS = "2026-11-01T00:00:00Z"


def _register(client, headers, uid: str, namespace: str, user: str, cpu: float):
    body = job_body(namespace=namespace, user=user, roles={"worker": {"count": 1, "cpu": cpu}})
    return client.put(f"/api/v1/jobs/{uid}", json=body, headers=headers)


def _without_times(job: dict) -> dict:
    return {k: v for k, v in job.items() if k not in ("created_at", "updated_at")}


@pytest.mark.parametrize(("me", "owner"), [(A, B), (B, A)])
def test_each_namespace_registers_and_uses_its_own_same_uid(teams, me, owner):
    client, tokens = teams
    assert _register(client, tokens[owner], "same-uid", owner, "carol", 8).status_code == 201
    kept = client.get("/api/v1/jobs/same-uid", headers=tokens[owner]).json()

    # My PUT answers exactly as on a uid nobody holds, and stores my job.
    on_taken = _register(client, tokens[me], "same-uid", me, "mallory", 1)
    on_new = _register(client, tokens[me], "never-seen", me, "mallory", 1)
    assert on_taken.status_code == on_new.status_code == 201
    assert _without_times(on_taken.json()) == _without_times(on_new.json()) | {"uid": "same-uid"}
    # PUT then GET: my own job, not a 404 that would say another namespace holds it.
    mine = client.get("/api/v1/jobs/same-uid", headers=tokens[me])
    assert mine.status_code == 200
    assert (mine.json()["namespace"], mine.json()["user"]) == (me, "mallory")

    # Everything I do on the uid reaches my job only.
    points = [node_point("same-uid-edljob-worker-0", TS, 0.5, 100.0)]
    pushed = client.post(
        "/api/v1/jobs/same-uid/samples", json={"nodes": points}, headers=tokens[me]
    )
    assert pushed.json() == {"accepted": 1, "duplicates": 0}
    patched = client.patch("/api/v1/jobs/same-uid", json={"status": "running"}, headers=tokens[me])
    assert patched.json()["status"] == "running"
    plan = client.post(
        "/api/v1/jobs/same-uid/optimize", json={"stage": "create"}, headers=tokens[me]
    )
    assert plan.status_code == 200 and plan.json()["job_uid"] == "same-uid"
    read = client.get("/api/v1/jobs/same-uid/samples", headers=tokens[me]).json()
    assert [p["cpu"] for p in read["nodes"]] == [0.5]

    # The owner's job: untouched (not even its update time), no sample, no plan.
    owners = tokens[owner]
    assert client.get("/api/v1/jobs/same-uid", headers=owners).json() == kept
    assert client.get("/api/v1/jobs/same-uid/samples", headers=owners).json()["nodes"] == []
    assert client.get("/api/v1/jobs/same-uid/plans", headers=owners).json() == []
    assert client.get("/api/v1/jobs/same-uid/nodes", headers=owners).json() == []


@pytest.mark.parametrize(("first", "later"), [(A, B), (B, A)])
def test_a_uid_registered_first_elsewhere_locks_nobody_out(teams, first, later):
    client, tokens = teams
    assert _register(client, tokens[first], "tomorrow", first, "mallory", 1).status_code == 201
    created = _register(client, tokens[later], "tomorrow", later, "carol", 8)
    assert created.status_code == 201
    again = _register(client, tokens[later], "tomorrow", later, "carol", 16)
    assert again.status_code == 200  # an update of its own job
    job = client.get("/api/v1/jobs/tomorrow", headers=tokens[later]).json()
    assert (job["namespace"], job["user"], job["roles"]["worker"]["cpu"]) == (later, "carol", 16)


def test_a_caller_reading_both_names_the_namespace_when_the_uid_is_in_both(teams):
    client, tokens = teams
    admin = tokens["admin"]
    _register(client, tokens[A], "same-uid", A, "ann", 1)
    _register(client, tokens[B], "same-uid", B, "bea", 2)
    both = client.get("/api/v1/jobs/same-uid", headers=admin)
    assert both.status_code == 409
    assert both.json()["error"]["field"] == "namespace"
    assert "team-a, team-b" in both.json()["error"]["message"]
    for team, user in ((A, "ann"), (B, "bea")):
        one = client.get("/api/v1/jobs/same-uid", params={"namespace": team}, headers=admin)
        assert one.json()["user"] == user
        portrait = client.get(
            "/api/v1/portraits/jobs/same-uid", params={"namespace": team}, headers=admin
        )
        assert portrait.status_code == 200
    assert client.get("/api/v1/portraits/jobs/same-uid", headers=admin).status_code == 409
    missing = client.get("/api/v1/jobs/same-uid", params={"namespace": "team-c"}, headers=admin)
    assert missing.status_code == 404
    # A PUT names its job by the body's namespace; a query naming another is refused.
    body = job_body(namespace=A, user="ann")
    mismatch = client.put("/api/v1/jobs/same-uid?namespace=team-b", json=body, headers=admin)
    assert mismatch.status_code == 422 and mismatch.json()["error"]["field"] == "namespace"


def test_a_limited_token_never_needs_nor_learns_another_namespace(teams):
    client, tokens = teams
    _register(client, tokens[A], "same-uid", A, "ann", 1)
    _register(client, tokens[B], "same-uid", B, "bea", 2)
    # Its own namespace is implied; naming it is fine; naming another is refused up front,
    # whether or not the uid exists there.
    assert client.get("/api/v1/jobs/same-uid", headers=tokens[A]).json()["user"] == "ann"
    named = client.get("/api/v1/jobs/same-uid", params={"namespace": A}, headers=tokens[A])
    assert named.json()["user"] == "ann"
    for uid in ("same-uid", "nowhere"):
        other = client.get(f"/api/v1/jobs/{uid}", params={"namespace": B}, headers=tokens[A])
        assert other.status_code == 403 and other.json()["error"]["field"] == "namespace"
        assert "bea" not in other.text


def test_a_job_first_seen_without_a_namespace_takes_the_first_one_named(teams):
    client, tokens = teams
    admin = tokens["admin"]
    bare = job_body(user="ann")  # e.g. a job its DLRover master reported first
    assert client.put("/api/v1/jobs/k8s-uid", json=bare, headers=admin).status_code == 201
    adopted = _register(client, admin, "k8s-uid", A, "ann", 1)
    assert adopted.status_code == 200 and adopted.json()["namespace"] == A
    assert client.get("/api/v1/jobs/k8s-uid", headers=admin).json()["namespace"] == A

    # A limited token cannot read jobs without a namespace: it registers its own. The
    # admin's bare uid still means the job the admin registered (vouched for).
    assert client.put("/api/v1/jobs/bare-uid", json=bare, headers=admin).status_code == 201
    assert _register(client, tokens[B], "bare-uid", B, "bea", 1).status_code == 201
    both = client.get("/api/v1/jobs/bare-uid", headers=admin)
    assert (both.json()["namespace"], both.json()["user"]) == (None, "ann")
    unnamed = client.get("/api/v1/jobs/bare-uid", params={"namespace": ""}, headers=admin)
    assert (unnamed.json()["namespace"], unnamed.json()["user"]) == (None, "ann")
    bs = client.get("/api/v1/jobs/bare-uid", params={"namespace": B}, headers=admin)
    assert (bs.json()["namespace"], bs.json()["user"]) == (B, "bea")


def test_a_uid_taken_in_another_namespace_denies_no_unrestricted_caller_its_job(teams, db):
    """A platform's token writes every namespace and registers b-live in team-b; team A
    then registers b-live in its own namespace. The platform, the admin and team B still
    reach B's job by the bare uid: a namespace-limited token can never vouch for a job,
    so it cannot make the uid ambiguous for anyone."""
    client, tokens = teams
    platform = bearer(token_secret(db, "platform", "write"))
    assert _register(client, platform, "b-live", B, "bea", 8).status_code == 201
    assert _register(client, tokens[A], "b-live", A, "mallory", 1).status_code == 201

    for caller in (platform, tokens["admin"], tokens[B]):
        job = client.get("/api/v1/jobs/b-live", headers=caller)
        assert job.status_code == 200, job.text
        assert (job.json()["namespace"], job.json()["user"]) == (B, "bea")
    points = [node_point("b-live-edljob-worker-0", TS, 6.0, 900.0)]
    pushed = client.post("/api/v1/jobs/b-live/samples", json={"nodes": points}, headers=platform)
    assert pushed.json() == {"accepted": 1, "duplicates": 0}
    patched = client.patch("/api/v1/jobs/b-live", json={"status": "running"}, headers=platform)
    assert (patched.json()["namespace"], patched.json()["status"]) == (B, "running")
    plan = client.post("/api/v1/jobs/b-live/optimize", json={"stage": "create"}, headers=platform)
    assert plan.status_code == 200, plan.text
    portrait = client.get("/api/v1/portraits/jobs/b-live", headers=tokens["admin"])
    assert portrait.status_code == 200

    # A's job got none of it, and A still reaches only its own.
    mine = client.get("/api/v1/jobs/b-live", headers=tokens[A]).json()
    assert (mine["namespace"], mine["user"], mine["status"]) == (A, "mallory", "pending")
    assert client.get("/api/v1/jobs/b-live/samples", headers=tokens[A]).json()["nodes"] == []
    assert client.get("/api/v1/jobs/b-live/plans", headers=tokens[A]).json() == []
    b_samples = client.get("/api/v1/jobs/b-live/samples", headers=tokens[B]).json()["nodes"]
    assert [p["cpu"] for p in b_samples] == [6.0]


def test_a_limited_tokens_registration_vouches_for_nothing(teams, db):
    """Two namespace-limited registrations of one uid: neither is vouched for, so the
    unrestricted caller must still name one (409), and a later PUT of the platform
    vouches for the job it names."""
    client, tokens = teams
    platform = bearer(token_secret(db, "platform", "write"))
    _register(client, tokens[A], "both-teams", A, "ann", 1)
    _register(client, tokens[B], "both-teams", B, "bea", 2)
    assert client.get("/api/v1/jobs/both-teams", headers=platform).status_code == 409
    assert _register(client, platform, "both-teams", B, "bea", 2).status_code == 200
    assert client.get("/api/v1/jobs/both-teams", headers=platform).json()["namespace"] == B
