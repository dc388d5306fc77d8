"""Write-behind for job masters' reports: ``persist_metrics`` answers once the report is
queued, and one thread writes the reports in arrival order.

DLRover calls ``persist_metrics`` without a deadline from inside its own RPC handlers
(rendezvous, step reports), so its answer must not wait for the database. One writer
keeps each job's reports in order. It takes everything queued at once (up to
``BATCH``) and hands it over as one batch, so that under a burst the reports of a job
are stored together and a cumulative report superseded within the batch is never
written (see ``api.dlrover.report_store``): writing is what costs the process CPU
(and, in Python, the lock every handler thread needs). A full queue, by count or by
the bytes its reports hold (``max_bytes``), makes the caller write its report itself
(backpressure, nothing dropped), so what waits in memory stays bounded.

Durability: a queued report lives in memory until written. A stop of the server
(``close``, SIGTERM in ``brain serve``) writes everything queued first; a crash of the
process loses what was queued and not yet written (at most the reports of the last
moments: the writer keeps up with the load ``scripts/bench_grpc.py`` makes). A failed
write is logged, counted and may be retried by the master's next report.
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
# What the queued reports may hold at most; each report is itself bounded
# (BRAIN_GRPC_REPORT_MAX_BYTES), so a full queue of small ones still fits.
MAX_QUEUED_BYTES = 64 * 1024 * 1024
BATCH = 500
IDLE_POLL_S = 0.01


class ReportWriter(Generic[Item]):
    def __init__(
        self,
        write_batch: Callable[[list[Item]], None],
        capacity: int = CAPACITY,
        size: Callable[[Item], int] = lambda item: 0,
        max_bytes: int = MAX_QUEUED_BYTES,
    ) -> None:
        self._write_batch = write_batch
        self._queue: queue.Queue[Item | None] = queue.Queue(capacity)
        self._size = size
        self._max_bytes = max_bytes
        self._queued_bytes = 0
        self._bytes_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="brain-grpc-reports", daemon=True)
        self._thread.start()

    def submit(self, item: Item) -> None:
        size = self._size(item)
        with self._bytes_lock:
            fits = self._queued_bytes + size <= self._max_bytes
            if fits:
                self._queued_bytes += size
        if fits:
            try:
                self._queue.put_nowait(item)
                return
            except queue.Full:
                self._release(size)
        self._write_batch([item])

    def queued_bytes(self) -> int:
        with self._bytes_lock:
            return self._queued_bytes

    def _release(self, size: int) -> None:
        with self._bytes_lock:
            self._queued_bytes -= size

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
        stopping = False
        while not stopping:
            batch: list[Item] = []
            taken = 0
            item = self._queue.get()
            while True:
                taken += 1
                if item is None:
                    stopping = True
                    break
                batch.append(item)
                if len(batch) >= BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            try:
                if batch:
                    self._write_batch(batch)
            except Exception:  # one bad batch must not stop the writer
                log.exception("cannot store job masters' reports")
            finally:
                self._release(sum(self._size(item) for item in batch))
                for _ in range(taken):
                    self._queue.task_done()
