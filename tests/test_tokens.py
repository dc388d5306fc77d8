"""API tokens: the `brain token` commands, hash-only storage, the verifier's cache and
`brain serve`'s refusal to listen beyond loopback without a token (PostgreSQL)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from sqlalchemy import select, text

from brain.cli import main
from brain.config import AuthMode
from brain.db.engine import make_session_factory
from brain.db.models import ApiToken
from brain.services.tokens import (
    AuthPolicy,
    TokenScope,
    TokenVerifier,
    create_token,
    revoke_token,
)
from tests.ports import free_port


def brain(*args: str, url: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "api.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "BRAIN_DATABASE_URL": url, **env},
        timeout=60,
    )


def test_create_list_revoke_and_only_a_hash_is_stored(pg_url, db, monkeypatch, capsys):
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)

    def token(*args: str) -> subprocess.CompletedProcess:
        """`brain token ...` in this process (the commands' own code, without a
        subprocess's start-up)."""
        code = main(["token", *args])
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    created = token(
        "create", "--name", "ci", "--scope", "write", "--namespace", "ml",
        "--namespace", "etl", "--expires", "90d",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("brain_") and len(secret) > 40
    assert "shown this once" in created.stderr and secret not in created.stderr

    with db.connect() as conn:
        rows = conn.execute(text("SELECT * FROM api_tokens")).mappings().all()
    assert len(rows) == 1
    row = rows[0]
    assert row["secret_sha256"] == hashlib.sha256(secret.encode()).hexdigest()
    assert all(secret not in str(value) for value in row.values())
    assert (row["scope"], sorted(row["namespaces"])) == ("write", ["etl", "ml"])
    days = (row["expires_at"] - row["created_at"]).total_seconds() / 86400
    assert days == pytest.approx(90, abs=0.01)

    listed = token("list")
    assert "ci" in listed.stdout and "active" in listed.stdout and "etl,ml" in listed.stdout
    assert secret not in listed.stdout

    again = token("create", "--name", "ci", "--scope", "read")
    assert again.returncode == 1 and "exists" in again.stderr

    assert token("revoke", "ci").returncode == 0
    assert "revoked" in token("list").stdout
    missing = token("revoke", "nope")
    assert missing.returncode == 1 and "no token named 'nope'" in missing.stderr


def test_verifier_reuses_an_answer_until_a_token_changes_or_the_ttl(db):
    factory = make_session_factory(db)
    with factory() as session:
        secret = create_token(session, "m", TokenScope.read, ["ml"]).secret
        other = create_token(session, "o", TokenScope.read).secret
        session.commit()
    cached, uncached = TokenVerifier(factory, ttl_s=3600), TokenVerifier(factory, ttl_s=0)
    principal = cached.verify(secret)
    assert (principal.name, principal.scope, principal.namespaces) == ("m", "read", {"ml"})
    assert uncached.verify(secret) == principal
    assert cached.verify(other).name == "o"
    # Revoked by hand in SQL (the version unchanged): served from memory until the TTL.
    with db.begin() as conn:
        conn.execute(text("UPDATE api_tokens SET revoked_at = now() WHERE name = 'm'"))
    assert cached.verify(secret) == principal
    assert uncached.verify(secret) is None  # a TTL of 0 reads again every time
    # Any change through this module raises the version: nothing cached is reused.
    with factory() as session:
        revoke_token(session, "o")
        session.commit()
    assert cached.verify(other) is None and cached.verify(secret) is None
    with factory() as session:
        assert session.scalar(select(ApiToken.revoked_at).where(ApiToken.name == "o"))


def test_scopes_include_the_ones_below():
    assert TokenScope.admin.covers(TokenScope.write) and TokenScope.write.covers(TokenScope.read)
    assert not TokenScope.read.covers(TokenScope.write)
    assert not TokenScope.write.covers(TokenScope.admin)


@pytest.mark.parametrize(
    ("mode", "host", "refused"),
    [
        (AuthMode.auto, "0.0.0.0", True),
        (AuthMode.auto, "10.1.2.3", True),
        (AuthMode.required, "::", True),
        (AuthMode.disabled, "0.0.0.0", False),
        (AuthMode.auto, "127.0.0.1", False),
        (AuthMode.auto, "::1", False),
        (AuthMode.auto, "localhost", False),
    ],
)
def test_policy_refuses_to_start_beyond_loopback_without_tokens(db, mode, host, refused):
    policy = AuthPolicy(mode, host, TokenVerifier(make_session_factory(db), ttl_s=0))
    assert (policy.refuses_to_start() is not None) == refused


def test_brain_serve_refuses_a_non_loopback_address_without_tokens(pg_url, db):
    # 192.0.2.1 (TEST-NET-1) cannot be bound here, so nothing ever listens beyond loopback.
    result = brain("serve", "--host", "192.0.2.1", "--port", str(free_port()), url=pg_url)
    assert result.returncode == 1
    assert "not starting" in result.stderr and "no API token exists" in result.stderr
    assert "brain token create" in result.stderr and "BRAIN_AUTH=disabled" in result.stderr


def test_rotate_gives_a_new_secret_keeps_scope_and_lifetime_and_delete_frees_the_name(
    pg_url, db, monkeypatch, capsys
):
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)

    def token(*args: str) -> tuple[int, str, str]:
        code = main(["token", *args])
        out, err = capsys.readouterr()
        return code, out.strip(), err

    code, old, _ = token("create", "--name", "m", "--scope", "write", "--namespace", "ml",
                         "--expires", "30d")  # fmt: skip
    assert code == 0
    factory = make_session_factory(db)
    with factory() as session:
        before = session.scalar(select(ApiToken))
        lifetime = before.expires_at - before.created_at
    code, new, err = token("rotate", "m")
    assert code == 0 and new.startswith("brain_") and new != old
    assert "new secret" in err and new not in err
    verifier = TokenVerifier(factory, ttl_s=0)
    assert verifier.verify(old) is None
    principal = verifier.verify(new)
    assert (principal.name, principal.scope, principal.namespaces) == ("m", "write", {"ml"})
    with factory() as session:
        row = session.scalar(select(ApiToken))
        assert row.prefix == new[:12]
        # 30 days again, counted from the rotation.
        assert row.created_at > before.created_at
        assert row.expires_at - row.created_at == lifetime
        assert lifetime.total_seconds() == pytest.approx(30 * 86400, abs=60)

    assert token("revoke", "m")[0] == 0
    code, _, err = token("rotate", "m")
    assert code == 1 and "revoked; delete it" in err
    assert token("delete", "m") == (0, "token 'm' deleted", "")
    assert verifier.verify(new) is None
    code, _, err = token("delete", "m")
    assert code == 1 and "no token named 'm'" in err
    code, again, _ = token("create", "--name", "m", "--scope", "read")
    assert code == 0 and verifier.verify(again).scope is TokenScope.read
    code, _, err = token("rotate", "nope")
    assert code == 1 and "no token named 'nope'" in err
