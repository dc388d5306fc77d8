"""Long-polls are woken by one watch per process, not by a query per waiter."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime

from sqlalchemy import event

from api.app import PLAN_WATCH_INTERVAL_S
from api.plan_watch import PlanWatch
from api.state import server_state
from brain.db.models import ScalePlanRow
from brain.optimizing.proposal import PlanBody
from tests.builders import job_body, make_job

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _plan(session, job_id: int) -> ScalePlanRow:
    plan = ScalePlanRow(
        job_id=job_id,
        stage="running",
        status="proposed",
        body=PlanBody(),
        created_at=T0,
        updated_at=T0,
    )
    session.add(plan)
    session.flush()
    return plan


def test_a_plan_committed_after_a_higher_id_still_wakes_its_job(session_factory):
    with session_factory.begin() as session:
        job_a, job_b = make_job(session, "a", start=T0), make_job(session, "b", start=T0)

    async def scenario() -> None:
        watch = PlanWatch(session_factory, interval_s=0.1)
        await watch.poll_once()  # starts from what is stored: nothing
        with watch.watching("a") as woke_a, watch.watching("b") as woke_b:
            slow = session_factory()
            slow.begin()
            plan_a = _plan(slow, job_a.id)  # draws id 1, not committed yet
            with session_factory.begin() as fast:
                plan_b = _plan(fast, job_b.id)  # id 2, committed first
            assert (plan_a.id, plan_b.id) == (1, 2)

            await watch.poll_once()
            assert woke_b.is_set() and not woke_a.is_set()

            woke_b.clear()
            slow.commit()
            slow.close()
            await watch.poll_once()
            # Id 1 appears below the highest id seen (2) and still wakes job a, once.
            assert woke_a.is_set() and not woke_b.is_set()
            woke_a.clear()
            await watch.poll_once()
            assert not woke_a.is_set()

    asyncio.run(scenario())


def test_waiting_long_polls_do_not_each_query_the_database(client):
    client.put("/api/v1/jobs/j", json=job_body(status="running"))
    reads: list[str] = []

    def count(_conn, _cursor, statement, *_args) -> None:
        if "FROM scale_plans" in statement:
            reads.append(statement)

    engine = server_state(client.app).engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        answers: list[int] = []

        def long_poll() -> None:
            response = client.get("/api/v1/jobs/j/plans/latest", params={"wait": 2})
            answers.append(response.status_code)

        pollers = [threading.Thread(target=long_poll) for _ in range(8)]
        started = time.monotonic()
        for poller in pollers:
            poller.start()
        for poller in pollers:
            poller.join()
        elapsed = time.monotonic() - started
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert answers == [204] * 8
    # Each waiter reads once, then waits on the watch; polling every 0.5 s would have read
    # 8 x 5 = 40 times. The watch reads new plan ids (with their jobs' uids) once per
    # interval for all of them, however long a loaded machine took.
    waiters = [r for r in reads if r.startswith("SELECT scale_plans.id, scale_plans.job_id")]
    watch = [r for r in reads if r.startswith("SELECT scale_plans.id, jobs.uid")]
    assert len(waiters) == 8
    assert len(watch) <= elapsed / PLAN_WATCH_INTERVAL_S + 2
