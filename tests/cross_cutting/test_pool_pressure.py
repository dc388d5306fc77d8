"""More requests than threads and connections: they queue, none waits for the pool's timeout.

A handler whose response were validated in a second trip to the thread pool would keep
its connection (the request's transaction commits after that validation) while it
waited for a thread, and the threads could all be handlers waiting for a connection:
with 2 threads and 1 connection, concurrent registrations would end in 503 `overloaded`
once the pool's timeout ran out. api.routing.OffloadedRoute is what this holds to.
"""

from __future__ import annotations

import threading

import anyio.to_thread

from api.state import server_state
from brain.db.engine import make_engine, make_session_factory
from tests.builders import job_body


def test_requests_beyond_threads_and_connections_all_succeed(client, pg_url):
    engine = make_engine(pg_url, pool_size=1, max_overflow=0, pool_timeout=5)
    server_state(client.app).session_factory = make_session_factory(engine)

    def two_threads() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2

    client.portal.call(two_threads)
    statuses: list[int] = []

    def register(uid: str) -> None:
        statuses.append(client.put(f"/api/v1/jobs/{uid}", json=job_body()).status_code)

    try:
        callers = [threading.Thread(target=register, args=(f"j{i}",)) for i in range(12)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
    finally:
        engine.dispose()
    assert statuses == [201] * 12
