"""The usage series of every run of a normalized run table, held in flat arrays.

A series file has one row per sample: ``workload``, ``ts`` (Unix seconds or an ISO
time), ``cpu`` (cores used) and ``mem_mib`` (memory used, MiB); other columns are
ignored. A sample belongs to the run of its workload whose span holds it: from the
run's start for one *period* (a UTC day for ``day`` traces, an hour for ``hour``
traces), or for its ``duration_h`` when the trace has exact start times. Samples
outside every run are left out; a run without samples is replayed as empty.

Runs of the table are sorted by workload then start, so the samples of one workload's
runs are contiguous: ``offsets[i]:offsets[i + 1]`` are run ``i``'s samples, and the
earlier runs of its workload lie just before them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from brain.replay.trace import TraceError

SERIES_COLUMNS = ("workload", "ts", "cpu", "mem_mib")


@dataclass(frozen=True)
class RunSeries:
    """Samples of every run: ``ts`` (Unix s, int64), ``cpu`` (cores), ``mem`` (MiB)."""

    offsets: np.ndarray  # len(runs) + 1
    ts: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    sample_s: float  # seconds one sample stands for (the trace's interval)

    def bounds(self, run: int) -> tuple[int, int]:
        return int(self.offsets[run]), int(self.offsets[run + 1])

    @property
    def samples(self) -> int:
        return int(self.offsets[-1])


def read_series(path: Path) -> pd.DataFrame:
    """The sample rows of a series CSV / CSV.gz, checked."""
    try:
        raw = pd.read_csv(
            path,
            usecols=lambda c: c in SERIES_COLUMNS,
            dtype={"workload": str, "cpu": float, "mem_mib": float},
        )
    except (OSError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"cannot read {path}: {exc}") from exc
    missing = [c for c in SERIES_COLUMNS if c not in raw]
    if missing:
        raise TraceError(f"the series {path} lacks {', '.join(missing)}")
    return raw


def unix_seconds(values: pd.Series) -> np.ndarray:
    """Sample times as int64 Unix seconds (numbers are taken as Unix seconds)."""
    if pd.api.types.is_numeric_dtype(values):
        return values.to_numpy(dtype=float).astype(np.int64)
    try:
        stamps = pd.to_datetime(values, utc=True)
    except (ValueError, TypeError) as exc:
        raise TraceError(f"cannot read `ts` as times: {exc}") from exc
    return _seconds(stamps)


def _seconds(stamps: pd.Series) -> np.ndarray:
    """Unix seconds of UTC datetimes, whatever their resolution."""
    epoch = pd.Timestamp(0, tz="UTC")
    return np.floor((stamps - epoch).dt.total_seconds().to_numpy()).astype(np.int64)


def attach(
    table: pd.DataFrame, samples: pd.DataFrame, *, period_s: float | None, sample_s: float
) -> RunSeries:
    """The samples of each run of the normalized ``table`` (see the module docstring).

    ``period_s`` is the span of a run from its start (None: its ``duration_h``).
    """
    if samples.empty:
        raise TraceError("the series has no samples")
    codes, names = pd.factorize(samples["workload"].astype(str))
    ts = unix_seconds(samples["ts"])
    order = np.lexsort((ts, codes))
    codes, ts = codes[order], ts[order]
    cpu = samples["cpu"].to_numpy(dtype=float)[order]
    mem = samples["mem_mib"].to_numpy(dtype=float)[order]
    # One sortable key per sample: workload code in the high bits, time in the low ones.
    key = codes.astype(np.int64) * (1 << 34) + ts
    index = {name: i for i, name in enumerate(names)}
    run_codes = table["workload"].map(index).to_numpy(dtype=float)
    start = _seconds(table["start"])
    if period_s is None:
        span = np.ceil(table["duration_h"].to_numpy(dtype=float) * 3600.0).astype(np.int64)
    else:
        span = np.full(len(table), int(period_s), dtype=np.int64)
    known = ~np.isnan(run_codes)
    run_key = np.where(known, np.nan_to_num(run_codes).astype(np.int64), -1) * (1 << 34)
    low = np.searchsorted(key, run_key + start, side="left")
    high = np.searchsorted(key, run_key + start + span, side="left")
    high = np.where(known, np.maximum(high, low), low)
    lengths = high - low
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    picked = (
        np.concatenate([np.arange(a, b) for a, b in zip(low, high, strict=True)])
        if len(table)
        else np.zeros(0, dtype=np.int64)
    ).astype(np.int64)
    return RunSeries(
        offsets=offsets, ts=ts[picked], cpu=cpu[picked], mem=mem[picked], sample_s=sample_s
    )


def period_of(trace_path: Path) -> float | None:
    """How long a run of the run-summary file lasts from its start, read from its time
    column: a UTC day for ``day``, an hour for ``hour``, else None (its duration)."""
    try:
        header = pd.read_csv(trace_path, nrows=0).columns
    except (OSError, pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise TraceError(f"cannot read {trace_path}: {exc}") from exc
    for column in ("start", "ts"):
        if column in header:
            return None
    if "day" in header:
        return 86400.0
    if "hour" in header:
        return 3600.0
    return None
