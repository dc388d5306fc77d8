"""Shared fixtures: a real PostgreSQL for every database test, SQLite where the embedded
default is concerned.

PostgreSQL: the server on 127.0.0.1:5432 when one answers (trust auth), otherwise a
throwaway server started with pg_ctl (tests/throwaway_pg.py); set
BRAIN_TEST_PG_THROWAWAY=1 to force the throwaway one. Each test session gets its
own freshly created database, migrated once with Alembic; tables are emptied between
tests (``db``).
"""

from __future__ import annotations

import functools
import os
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import hypothesis
import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from api.app import create_app
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_session_factory
from brain.db.models import Base
from tests.builders import token_secret
from tests.builders.tenancy import team_headers
from tests.throwaway_pg import throwaway_postgres

# The embedded default database lives in the user's data directory (brain.data_dir):
# no test, nor a `brain` it starts, may touch the real one of whoever runs the suite.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="brain-tests-data-")

# Property tests draw the same examples every run, wherever the suite runs (a run must
# not fail on an example it happens to draw; CI may not say it is CI), and have no
# per-example deadline on a shared two-core machine. BRAIN_TEST_EXPLORE=1 draws new
# examples each run, to search for counterexamples to keep with @example.
hypothesis.settings.register_profile("fixed", derandomize=True, deadline=None)
hypothesis.settings.register_profile("explore", deadline=None)
hypothesis.settings.load_profile("explore" if os.environ.get("BRAIN_TEST_EXPLORE") else "fixed")

LOCAL_PG = ("127.0.0.1", 5432)


def _local_postgres_answers() -> bool:
    if os.environ.get("BRAIN_TEST_PG_THROWAWAY"):
        return False
    try:
        with socket.create_connection(LOCAL_PG, timeout=1):
            pass
        with psycopg.connect(
            host=LOCAL_PG[0], port=LOCAL_PG[1], user="postgres", dbname="postgres"
        ):
            return True
    except OSError:
        return False
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory) -> Iterator[dict]:
    """Connection parameters of a PostgreSQL server for this test session."""
    if _local_postgres_answers():
        yield {"host": LOCAL_PG[0], "port": LOCAL_PG[1], "user": "postgres"}
        return
    base = Path(tempfile.mkdtemp(prefix="brain-pg-"))
    with throwaway_postgres(base) as server:
        yield server


def _admin(server: dict) -> psycopg.Connection:
    return psycopg.connect(**server, dbname="postgres", autocommit=True)


@pytest.fixture(scope="session")
def make_pg_database(pg_server) -> Iterator:
    """Factory: a new empty database URL; every database made is dropped at the end."""
    made: list[str] = []

    def make() -> str:
        name = f"brain_test_{uuid.uuid4().hex[:12]}"
        with _admin(pg_server) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        made.append(name)
        server = pg_server
        return f"postgresql+psycopg://{server['user']}@{server['host']}:{server['port']}/{name}"

    yield make
    with _admin(pg_server) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_url(make_pg_database) -> str:
    """The session's PostgreSQL database, migrated to head."""
    url = make_pg_database()
    migrate.upgrade(url)
    return url


@pytest.fixture(scope="session")
def pg_engine(pg_url) -> Iterator[Engine]:
    engine = make_engine(pg_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def emptying_statements(pg_engine) -> list[str]:
    """Delete every row (children first) and restart the id sequences.

    Not TRUNCATE: on these few-row tables TRUNCATE, which swaps in new files for every
    table and index, took ~200 ms per test where this takes a few. Not a transaction
    rolled back per test either: most tests commit through the app, the CLI or threads
    on connections of their own, which such a transaction cannot hold."""
    with pg_engine.connect() as conn:
        sequences = conn.scalars(
            text(
                "SELECT sequence_name FROM information_schema.sequences"
                " WHERE sequence_schema = current_schema()"
            )
        ).all()
    deletes = [f"DELETE FROM {table.name}" for table in reversed(Base.metadata.sorted_tables)]
    return deletes + [f"ALTER SEQUENCE {name} RESTART" for name in sequences]


@pytest.fixture
def db(pg_engine, emptying_statements) -> Iterator[Engine]:
    """The migrated PostgreSQL engine, with every table empty at the start of the test."""
    with pg_engine.begin() as conn:
        for statement in emptying_statements:
            conn.execute(text(statement))
    yield pg_engine


@pytest.fixture
def session_factory(db) -> sessionmaker[Session]:
    return make_session_factory(db)


@pytest.fixture
def session(session_factory) -> Iterator[Session]:
    """A session on the emptied, migrated PostgreSQL database."""
    with session_factory() as session:
        yield session


@pytest.fixture
def make_token(db):
    """Create a token in the test database; returns its secret."""
    return functools.partial(token_secret, db)


@pytest.fixture
def settings(pg_url, db, tmp_path) -> Settings:
    # Models of a developer's `brain train` (./brain-models) must not leak into tests.
    return Settings(database_url=pg_url, model_dir=str(tmp_path / "models"))


@pytest.fixture
def client(settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture
def teams(settings, db) -> Iterator[tuple[TestClient, dict[str, dict[str, str]]]]:
    """A server with an admin token and one write token per team (tests.builders.tenancy)."""
    headers = team_headers(db)
    with TestClient(create_app(settings)) as client:
        yield client, headers


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'brain.db'}"
    migrate.upgrade(url)
    return url


@pytest.fixture
def sqlite_client(sqlite_url) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(database_url=sqlite_url))) as test_client:
        yield test_client
