"""A one-line progress bar on stderr, for long replays; silent when not on a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """Call with the number of runs done; the line ends when all are done.

    Draws only on a terminal and unless ``quiet``, and only when a whole percent
    more is done, so piping the output or capturing it in tests shows nothing.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        quiet: bool = False,
        stream: TextIO | None = None,
        unit: str = "runs",
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._total = max(total, 1)
        self._label = label
        self._unit = unit
        self._enabled = not quiet and self._stream.isatty()
        self._shown = -1

    def __call__(self, done: int) -> None:
        percent = min(100, done * 100 // self._total)
        if not self._enabled or percent == self._shown:
            return
        self._shown = percent
        filled = WIDTH * percent // 100
        bar = "#" * filled + "." * (WIDTH - filled)
        end = "\n" if done >= self._total else ""
        self._stream.write(
            f"\r{self._label} [{bar}] {percent:3d}% {done}/{self._total} {self._unit}{end}"
        )
        self._stream.flush()
