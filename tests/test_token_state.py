"""Tokens as a whole (the ``token_state`` row): a loopback server with BRAIN_AUTH=auto
stays closed once a token has existed, and a token changed anywhere is refused by every
server process at its next request (PostgreSQL; the migration on SQLite too)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from api.app import create_app
from brain.cli import main
from brain.db import migrate
from brain.db.engine import make_engine
from brain.db.models import TokenStateRow
from brain.domain import utcnow
from tests.builders import bearer, job_body

JOB = job_body(name="anon-write")


@pytest.fixture
def token_cli(pg_url, monkeypatch, capsys):
    """`brain token ...` in this process, against the test database."""
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)

    def run(*args: str) -> subprocess.CompletedProcess:
        code = main(["token", *args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run


@pytest.fixture
def servers(settings) -> Iterator[tuple[TestClient, TestClient]]:
    """Two app instances on one database (as two workers or replicas), each caching
    token checks for an hour: only the database can tell them a token changed."""
    cached = settings.model_copy(update={"token_cache_s": 3600})
    with TestClient(create_app(cached)) as a, TestClient(create_app(cached)) as b:
        yield a, b


def _auth(client: TestClient) -> dict:
    return client.get("/readyz").json()["checks"]["auth"]


def _closed(client: TestClient) -> None:
    """No anonymous write, no anonymous token administration, and /readyz says so."""
    assert client.put("/api/v1/jobs/anon", json=JOB).status_code == 401
    assert client.get("/api/v1/tokens").status_code == 401
    assert client.post("/api/v1/tokens", json={"name": "x", "scope": "admin"}).status_code == 401
    auth = _auth(client)
    assert auth["status"] == "enforced", auth
    assert "brain token reopen" in auth["detail"]


def test_revoking_the_last_token_leaves_a_loopback_server_closed(client):
    assert _auth(client)["status"] == "open"
    created = client.post("/api/v1/tokens", json={"name": "first", "scope": "admin"})
    assert created.status_code == 201
    admin = bearer(created.json()["secret"])
    assert client.put("/api/v1/jobs/anon", json=JOB).status_code == 401
    assert client.delete("/api/v1/tokens/first", headers=admin).status_code == 200

    _closed(client)
    # The revoked secret itself is refused as well.
    assert client.get("/api/v1/jobs", headers=admin).status_code == 401


def test_deleted_and_expired_tokens_leave_it_closed_too(client, token_cli, make_token):
    assert token_cli("create", "--name", "gone", "--scope", "admin").returncode == 0
    assert token_cli("delete", "gone").returncode == 0
    _closed(client)  # no token row is left at all

    # Only an expired token: made an hour ago with a minute's lifetime.
    hour_ago = utcnow() - timedelta(hours=1)
    old = make_token("old", "admin", expires_at=hour_ago + timedelta(minutes=1), now=hour_ago)
    _closed(client)
    assert client.get("/api/v1/jobs", headers=bearer(old)).status_code == 401


def test_reopening_is_an_explicit_command_refused_while_a_token_is_usable(client, token_cli):
    assert token_cli("create", "--name", "admin", "--scope", "admin").returncode == 0
    refused = token_cli("reopen")
    assert refused.returncode == 1
    assert "brain token reopen: 1 usable token(s) exist" in refused.stderr
    assert client.put("/api/v1/jobs/anon", json=JOB).status_code == 401

    assert token_cli("revoke", "admin").returncode == 0
    _closed(client)
    reopened = token_cli("reopen")
    assert reopened.returncode == 0 and "reopened" in reopened.stdout
    assert _auth(client)["status"] == "open"
    assert client.put("/api/v1/jobs/anon", json=JOB).status_code == 201

    # The next token closes it again.
    assert token_cli("create", "--name", "again", "--scope", "read").returncode == 0
    assert client.put("/api/v1/jobs/anon2", json=JOB).status_code == 401


def test_a_rotated_or_deleted_secret_is_refused_by_another_server_at_its_next_request(
    servers, token_cli, make_token
):
    a, b = servers
    admin = bearer(make_token("admin", "admin"))
    old = token_cli("create", "--name", "m", "--scope", "write").stdout.strip()
    # b has checked (and cached for an hour) the secret.
    assert b.get("/api/v1/jobs", headers=bearer(old)).status_code == 200

    new = token_cli("rotate", "m").stdout.strip()
    assert b.get("/api/v1/jobs", headers=bearer(old)).status_code == 401
    assert b.get("/api/v1/jobs", headers=bearer(new)).status_code == 200

    # Revoked through a's API: b refuses it at once.
    assert a.delete("/api/v1/tokens/m", headers=admin).status_code == 200
    assert b.get("/api/v1/jobs", headers=bearer(new)).status_code == 401

    other = token_cli("create", "--name", "n", "--scope", "read").stdout.strip()
    assert b.get("/api/v1/jobs", headers=bearer(other)).status_code == 200
    assert token_cli("delete", "n").returncode == 0
    assert b.get("/api/v1/jobs", headers=bearer(other)).status_code == 401
    # Tokens nobody touched stay valid from b's cache.
    assert b.get("/api/v1/tokens", headers=admin).status_code == 200


def test_every_change_raises_the_version_once(db, token_cli, make_token):
    def version() -> int:
        with db.connect() as conn:
            return conn.scalar(select(TokenStateRow.version)) or 0

    assert version() == 0  # no row yet: never a token
    make_token("a", "admin")
    steps = [("rotate", "a"), ("revoke", "a"), ("revoke", "a"), ("delete", "a")]
    seen = [version()]
    for step in steps:
        assert token_cli(*step).returncode == 0
        seen.append(version())
    # The second revoke changed nothing, so it raised nothing.
    assert seen == [1, 2, 3, 3, 4]


@pytest.mark.parametrize("kind", ["postgresql", "sqlite"])
def test_a_database_with_tokens_is_closed_from_its_oldest_token(kind, request, tmp_path):
    def database(name: str) -> str:
        if kind == "sqlite":
            return f"sqlite:///{tmp_path / name}.db"
        return request.getfixturevalue("make_pg_database")()

    with_tokens, without = database("with"), database("without")
    for url in (with_tokens, without):
        migrate.upgrade(url, "0015")
    engine = make_engine(with_tokens)
    with engine.begin() as conn:
        # The older token was made second: the oldest, not the first row, counts.
        for id_, name, day in ((1, "new", 21), (2, "old", 20)):
            conn.execute(
                text(
                    "INSERT INTO api_tokens (id, name, secret_sha256, prefix, scope, "
                    "created_at, revoked_at) VALUES (:id, :name, :sha, 'brain_', 'admin', "
                    ":at, :at)"
                ),
                {"id": id_, "name": name, "sha": name * 16, "at": f"2026-11-{day} 10:00:00+00:00"},
            )
    engine.dispose()
    states = []
    row = select(TokenStateRow.version, TokenStateRow.closed_since)
    for url in (with_tokens, without):
        migrate.upgrade(url)
        engine = make_engine(url)
        with engine.connect() as conn:
            version, since = conn.execute(row).one()
        engine.dispose()
        states.append((version, since and since.isoformat()))
    assert states == [(1, "2026-11-20T10:00:00+00:00"), (1, None)]
