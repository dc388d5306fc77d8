"""Pooled PostgreSQL connections: pinged only after an idle spell; a dead one is replaced."""

from __future__ import annotations

import psycopg
from sqlalchemy import Engine, text

from brain.db import engine as engine_module
from brain.db.engine import make_engine


def _engine_counting_pings(pg_url: str, pings: list[int]) -> Engine:
    engine = make_engine(pg_url, pool_size=1, max_overflow=0)
    ping = engine.dialect.do_ping

    def counted(dbapi_connection) -> bool:
        pings.append(1)
        return ping(dbapi_connection)

    engine.dialect.do_ping = counted
    return engine


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.execute(text("SELECT pg_backend_pid()")).scalar_one()


def test_a_connection_returned_moments_ago_is_used_without_a_ping(pg_url):
    pings: list[int] = []
    engine = _engine_counting_pings(pg_url, pings)
    try:
        assert _backend_pid(engine) == _backend_pid(engine)
    finally:
        engine.dispose()
    assert pings == []


def test_an_idle_connection_is_pinged_and_replaced_when_its_server_went_away(pg_url, monkeypatch):
    monkeypatch.setattr(engine_module, "IDLE_PING_S", 0.0)
    pings: list[int] = []
    engine = _engine_counting_pings(pg_url, pings)
    try:
        dead = _backend_pid(engine)
        dsn = pg_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (dead,))
        # The ping finds the dead connection; the pool opens another; the caller never
        # sees the failure.
        assert _backend_pid(engine) != dead
    finally:
        engine.dispose()
    assert len(pings) >= 2
