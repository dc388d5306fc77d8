"""Write-behind for job masters' reports: ``persist_metrics`` answers once the report is
queued, and one thread writes the reports in arrival order.

DLRover calls ``persist_metrics`` without a deadline from inside its own RPC handlers
(rendezvous, step reports), so its answer must not wait for the database. One writer
keeps each job's reports in order; a full queue makes the caller write the report
itself (backpressure, nothing dropped).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)
Item = TypeVar("Item")
CAPACITY = 10_000
IDLE_POLL_S = 0.01


class ReportWriter(Generic[Item]):
    def __init__(self, write: Callable[[Item], None], capacity: int = CAPACITY) -> None:
        self._write = write
        self._queue: queue.Queue[Item | None] = queue.Queue(capacity)
        self._thread = threading.Thread(target=self._run, name="brain-grpc-reports", daemon=True)
        self._thread.start()

    def submit(self, item: Item) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._write(item)

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether every queued report was written within ``timeout_s`` (bounded wait)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(IDLE_POLL_S)
        return True

    def close(self) -> None:
        """Write what is queued, then stop."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._write(item)
            except Exception:  # one bad report must not stop the writer
                log.exception("cannot store a job master's report")
            finally:
                self._queue.task_done()
