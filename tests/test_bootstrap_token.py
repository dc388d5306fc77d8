"""BRAIN_BOOTSTRAP_TOKEN: a first admin token from the environment, so `brain serve`
beyond loopback starts in a fresh pod before anyone could run `brain token create`."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr, ValidationError
from sqlalchemy import select

from api.cli import _startup_problem
from brain.config import Settings
from brain.db.engine import make_session_factory
from brain.db.models import ApiToken
from brain.services.tokens import (
    BootstrapOutcome,
    TokenScope,
    TokenVerifier,
    create_token,
    ensure_bootstrap_token,
    hash_secret,
    revoke_token,
)
from tests.ports import free_port

SECRET = "s" * 40
OTHER = "t" * 40
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _tokens(session) -> list[tuple[str, str, str, datetime | None]]:
    rows = session.scalars(select(ApiToken).order_by(ApiToken.name))
    return [(t.name, t.scope, t.secret_sha256, t.revoked_at) for t in rows]


def test_created_once_then_found_then_replaced_when_the_secret_changes(session):
    assert ensure_bootstrap_token(session, SECRET, T0) is BootstrapOutcome.created
    assert ensure_bootstrap_token(session, SECRET, T0) is BootstrapOutcome.present
    assert _tokens(session) == [("bootstrap", "admin", hash_secret(SECRET), None)]
    assert ensure_bootstrap_token(session, OTHER, T0) is BootstrapOutcome.replaced
    assert _tokens(session) == [("bootstrap", "admin", hash_secret(OTHER), None)]
    token = session.scalar(select(ApiToken))
    # The secret's first 6 characters only: 34 of the 40 stay unknown to `token list`.
    assert (token.prefix, token.namespaces, token.expires_at) == ("tttttt", None, None)


def test_a_revoked_bootstrap_token_stays_revoked(session):
    ensure_bootstrap_token(session, SECRET, T0)
    revoke_token(session, "bootstrap", T0)
    assert ensure_bootstrap_token(session, SECRET, T0) is BootstrapOutcome.revoked
    assert _tokens(session) == [("bootstrap", "admin", hash_secret(SECRET), T0)]


def test_short_secrets_are_refused_naming_the_setting():
    with pytest.raises(ValidationError, match="bootstrap_token"):
        Settings(bootstrap_token="x" * 31)
    assert Settings(bootstrap_token="x" * 32).masked()["bootstrap_token"] == "***"


def test_serving_beyond_loopback_starts_with_the_bootstrap_token_and_it_is_admin(
    settings, session_factory
):
    wide = settings.model_copy(update={"host": "0.0.0.0"})
    assert "no API token exists" in _startup_problem(wide)
    bootstrapped = wide.model_copy(update={"bootstrap_token": SecretStr(SECRET)})
    assert _startup_problem(bootstrapped) is None
    assert _startup_problem(bootstrapped) is None  # a restart: the same token, no error
    principal = TokenVerifier(session_factory, ttl_s=0).verify(SECRET)
    assert (principal.name, principal.scope, principal.namespaces) == ("bootstrap", "admin", None)
    with session_factory() as session:
        assert len(_tokens(session)) == 1


def test_other_tokens_are_left_alone(settings, session_factory):
    with session_factory() as session:
        reader = create_token(session, "reader", TokenScope.read).secret
        session.commit()
    bootstrapped = settings.model_copy(update={"bootstrap_token": SecretStr(SECRET)})
    assert _startup_problem(bootstrapped) is None
    verifier = TokenVerifier(session_factory, ttl_s=0)
    assert verifier.verify(reader).scope is TokenScope.read
    assert verifier.verify(SECRET).scope is TokenScope.admin


def test_brain_serve_gets_past_the_token_check_with_the_bootstrap_token(pg_url, db):
    # 192.0.2.1 (TEST-NET-1) cannot be bound here: the server stops at binding, after
    # the checks, so nothing ever listens beyond loopback.
    env = {**os.environ, "BRAIN_DATABASE_URL": pg_url, "BRAIN_BOOTSTRAP_TOKEN": SECRET}
    result = subprocess.run(
        [sys.executable, "-m", "api.main", "serve", "--host", "192.0.2.1"]
        + ["--port", str(free_port()), "--workers", "1"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode != 0  # the address cannot be bound
    assert "no API token exists" not in result.stderr
    assert "bootstrap admin token 'bootstrap': created" in result.stderr
    with make_session_factory(db)() as session:
        assert _tokens(session) == [("bootstrap", "admin", hash_secret(SECRET), None)]
