"""Fixtures the API's tests share: a token of each scope, and a server that enforces them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app


@pytest.fixture
def tokens(make_token) -> dict[str, str]:
    return {scope: make_token(f"{scope}-token", scope) for scope in ("read", "write", "admin")}


@pytest.fixture
def secured(settings, tokens) -> Iterator[TestClient]:
    """A loopback server with tokens: enforced."""
    with TestClient(create_app(settings)) as client:
        yield client
