"""Wake long-polls when plans are stored, with one database query per process.

A long-poll that queried the database itself while it waited would cost one query per
waiter per interval, and with many waiting job masters fill the thread pool and the
connection pool so that sample pushes and registrations time out behind them. So one
task per process looks for new plan ids every ``interval_s`` and wakes the waiters of
those plans' jobs; a waiter queries only when it starts and when it is woken. Plans
stored by any process on the same database (REST, gRPC, another ``brain serve``) are
seen the same way.

Plan ids are drawn when a transaction inserts and become visible when it commits, so a
lower id can appear after a higher one was seen. Each poll therefore re-reads the
``lookback`` ids below the highest seen and wakes only for ids it has not seen before:
an id drawn that far before a later one would need as many plan-writing transactions
open at once, more than the connection pools allow.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from brain.services import plans

log = logging.getLogger(__name__)


class PlanWatch:
    def __init__(
        self, session_factory: Callable[[], Session], interval_s: float, lookback: int = 256
    ) -> None:
        self._session_factory = session_factory
        self.interval_s = interval_s
        self._lookback = lookback
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._highest: int | None = None
        self._seen: set[int] = set()
        self._failing = False

    @contextmanager
    def watching(self, uid: str) -> Iterator[asyncio.Event]:
        """An event set whenever a new plan of job ``uid`` is seen; clear it before
        each read of the plans, so a plan stored during the read still wakes it."""
        event = asyncio.Event()
        self._waiters[uid].add(event)
        try:
            yield event
        finally:
            waiting = self._waiters[uid]
            waiting.discard(event)
            if not waiting:
                del self._waiters[uid]

    async def run(self) -> None:
        while True:
            await self.poll_once()
            await asyncio.sleep(self.interval_s)

    async def poll_once(self) -> None:
        try:
            if self._highest is None:
                # Start from what is stored: those plans are no news to anyone.
                newest, known = await run_in_threadpool(self._read_start)
                self._seen = {plan_id for plan_id, _uid in known}
                self._highest = max(self._seen, default=newest)
                return
            floor = self._highest - self._lookback
            found = await run_in_threadpool(self._read_from, floor)
        except SQLAlchemyError as exc:
            # The database is down or not migrated yet: waiters time out with 204 and
            # poll again, as they would with no new plan; say so once, not every poll.
            if not self._failing:
                log.warning("plan watch cannot read plans (%s); retrying", type(exc).__name__)
            self._failing = True
            return
        self._failing = False
        for plan_id, uid in found:
            if plan_id in self._seen or plan_id <= floor:
                continue
            self._seen.add(plan_id)
            self._highest = max(self._highest, plan_id)
            for event in self._waiters.get(uid, ()):
                event.set()
        floor = self._highest - self._lookback
        self._seen = {plan_id for plan_id in self._seen if plan_id > floor}

    def _read_start(self) -> tuple[int, list[tuple[int, str]]]:
        with self._session_factory() as session:
            newest = plans.newest_plan_id(session)
            return newest, plans.plans_from(session, newest - self._lookback)

    def _read_from(self, floor: int) -> list[tuple[int, str]]:
        with self._session_factory() as session:
            return plans.plans_from(session, floor)
