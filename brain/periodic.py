"""A daemon thread that runs one unit of work every ``interval_s`` until stopped, for
in-process maintenance (summary refresh, model retraining). Work that must run in one
process of several skips its turn unless ``only_if`` says this process leads
(brain.leadership)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    def __init__(
        self,
        name: str,
        interval_s: float,
        work: Callable[[], None],
        only_if: Callable[[], bool] = lambda: True,
    ) -> None:
        self._name = name
        self._interval_s = interval_s
        self._work = work
        self._only_if = only_if
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            if not self._only_if():
                continue
            try:
                self._work()
            except Exception:  # a bad cycle must not end the thread
                log.exception("%s failed; retrying next cycle", self._name)
