"""How much a token check costs: prints measured figures (a benchmark, not a test).

Creates a throwaway PostgreSQL database, migrates it, stores --tokens tokens, then times
- ``AuthPolicy.authenticate`` as the REST middleware calls it, on the app's read
  sessions (no transaction), answered from the cache (the steady state: a job master
  presents the same token every 15 s; the check reads the token version, one
  primary-key read, and reuses the answer while it is unchanged);
- the same with the cache off (``ttl 0``): the version read and one indexed lookup by
  hash per check;
- a whole request, ``GET /api/v1/jobs/{uid}`` in-process, with a token and with
  authentication disabled, to see the check within a request.
Target: a check under 1 ms. The database is dropped afterwards.

    .venv/bin/python scripts/bench_tokens.py [--host 127.0.0.1 --port 5432 --user postgres]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
import uuid

import psycopg
from fastapi.testclient import TestClient

from api.app import create_app
from brain.config import AuthMode, Settings
from brain.db import migrate
from brain.db.engine import make_engine, make_read_session_factory, make_session_factory
from brain.services.tokens import AuthPolicy, TokenScope, TokenVerifier, create_token


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="PostgreSQL host (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5432, help="PostgreSQL port (default 5432)")
    p.add_argument("--user", default="postgres", help="PostgreSQL user (default postgres)")
    p.add_argument("--tokens", type=int, default=1000, help="tokens stored (default 1,000)")
    p.add_argument("--checks", type=int, default=20_000, help="cached checks timed (20,000)")
    p.add_argument("--lookups", type=int, default=2_000, help="uncached checks timed (2,000)")
    p.add_argument("--requests", type=int, default=1_000, help="requests per variant (1,000)")
    return p.parse_args()


def timed_ms(call, times: int) -> list[float]:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def report(label: str, spent_ms: list[float]) -> None:
    ordered = sorted(spent_ms)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    print(
        f"{label:44} n={len(spent_ms):6}  p50 {statistics.median(spent_ms):8.4f} ms  "
        f"p99 {p99:8.4f} ms  max {ordered[-1]:8.4f} ms"
    )


def main() -> None:
    args = parse_args()
    name = f"brain_bench_tokens_{uuid.uuid4().hex[:8]}"
    admin = {"host": args.host, "port": args.port, "user": args.user, "dbname": "postgres"}
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{name}"
    try:
        migrate.upgrade(url)
        engine = make_engine(url)
        factory = make_session_factory(engine)
        with factory() as session:
            secrets = [
                create_token(session, f"t{i}", TokenScope.write, ["ml"]).secret
                for i in range(args.tokens)
            ]
            session.commit()
        secret = secrets[len(secrets) // 2]
        print(f"{args.tokens} tokens stored in PostgreSQL ({name})")

        reads = make_read_session_factory(engine)  # as api.app gives its verifier
        cached = AuthPolicy(AuthMode.auto, "0.0.0.0", TokenVerifier(reads, ttl_s=3600))
        cached.authenticate(secret)  # fill the cache
        report(
            "check, cached (the steady state)",
            timed_ms(lambda: cached.authenticate(secret), args.checks),
        )
        uncached = AuthPolicy(AuthMode.auto, "0.0.0.0", TokenVerifier(reads, ttl_s=0))
        report(
            "check, cache off (one lookup by hash)",
            timed_ms(lambda: uncached.authenticate(secret), args.lookups),
        )
        engine.dispose()

        base = Settings(database_url=url, summary_interval_s=0)
        for label, settings, headers in [
            ("GET /api/v1/jobs/{uid}, token (cached)", base, {"Authorization": f"Bearer {secret}"}),
            (
                "GET /api/v1/jobs/{uid}, BRAIN_AUTH=disabled",
                base.model_copy(update={"auth": AuthMode.disabled}),
                {},
            ),
        ]:
            with TestClient(create_app(settings)) as client:
                put = client.put(
                    "/api/v1/jobs/j1",
                    json={"name": "n", "user": "u", "namespace": "ml"},
                    headers=headers,
                )
                assert put.status_code in (200, 201), put.text
                read = functools.partial(client.get, "/api/v1/jobs/j1", headers=headers)
                timed_ms(read, 100)  # warm up
                report(label, timed_ms(read, args.requests))
    finally:
        with psycopg.connect(**admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
