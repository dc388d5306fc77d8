"""Small run-summary traces, written out row by row so the expected figures can be worked
out by hand."""

from __future__ import annotations

import pandas as pd

from brain.replay.trace import normalize


def trace(rows: list[dict]) -> pd.DataFrame:
    """A normalized run table from Bitbrains-shaped rows; missing usage is filled in."""
    filled = [
        {
            "samples": 288,
            "req_cpu": 2.0,
            "req_memory_mib": 1000.0,
            "cpu_mean": 0.1,
            "cpu_p95": 0.5,
            "cpu_max": 0.6,
            "mem_mean": 50.0,
            "mem_max": 100.0,
        }
        | row
        for row in rows
    ]
    return normalize(pd.DataFrame(filled))
