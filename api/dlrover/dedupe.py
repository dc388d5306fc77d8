"""The reports a job master sent recently: a repeat is answered without touching the store.

Masters resend the same report (every rendezvous round, every retry). Keys are (uid,
kind, SHA-256 digest of the payload), not payloads, so the memory this takes is bounded
by the count alone; the oldest key goes first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator

ReportKey = tuple[str, str, bytes]
SEEN_REPORTS = 10_000


class SeenReports:
    def __init__(self, capacity: int = SEEN_REPORTS) -> None:
        self._capacity = capacity
        self._keys: OrderedDict[ReportKey, None] = OrderedDict()
        self._lock = threading.Lock()

    def seen_before(self, key: ReportKey) -> bool:
        with self._lock:
            if key in self._keys:
                self._keys.move_to_end(key)
                return True
            return False

    def remember(self, key: ReportKey) -> None:
        with self._lock:
            self._keys[key] = None
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)

    def forget(self, key: ReportKey) -> None:
        """A report that was not stored: its retry must be written again."""
        with self._lock:
            self._keys.pop(key, None)

    def __iter__(self) -> Iterator[ReportKey]:
        with self._lock:
            return iter(list(self._keys))
