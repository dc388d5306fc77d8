"""Loading a history of runs into the normalized run table the replay works on.

A ``RunSource`` yields that table; ``TraceFile`` reads a CSV / CSV.gz in the
run-summary shape of the shared reference traces and normalizes it. Any other
loader (e.g. one over the database) plugs in by returning the same table, which
``check_normalized`` verifies.

Normalized run table, one row per run, sorted by ``workload``, ``start``, ``seq``:

| column | meaning |
|---|---|
| workload | the recurring workload the run belongs to |
| start | run start, pandas datetime64 in UTC |
| seq | position in the input; orders runs with the same ``start`` |
| duration_h | run length in hours |
| req_cpu, req_memory_mib | CPU cores and memory (MiB) requested per node, as given |
| req_gpu, req_gpu_memory_mib | GPUs requested; their memory (``req_gpu`` x card) |
| cpu_mean, cpu_p95, cpu_max | CPU cores used |
| mem_mean, mem_max | memory used (MiB) |
| gpu_util_mean | GPU busy fraction |
| gpu_mem_mib_max, gpu_mem_total_mib | peak GPU memory used, memory of one card (MiB) |

Columns a trace does not have are NaN. Input columns understood: ``workload``; a
time column, the first of ``start`` / ``ts`` (ISO time or Unix seconds), ``day``
(a date) or ``hour`` (hours since an arbitrary origin); ``duration_s``, or else
``samples`` x the sample interval (5 minutes for ``day`` traces, 1 minute for
``hour`` traces, 5 minutes otherwise, unless given); the ``req_*`` and usage
columns above under the same names, ``gpu_mem_mib_max`` for GPU memory.
Without ``req_gpu`` a GPU run asks for one card; without ``gpu_mem_total_mib``
the card has the given size.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from brain.replay.resources import DEFAULT_GPU_MEMORY_MIB

TIME_COLUMNS = ("start", "ts", "day", "hour")
USAGE_COLUMNS = (
    "cpu_mean",
    "cpu_p95",
    "cpu_max",
    "mem_mean",
    "mem_max",
    "gpu_util_mean",
    "gpu_mem_mib_max",
)
REQUEST_COLUMNS = ("req_cpu", "req_memory_mib", "req_gpu", "req_gpu_memory_mib")
RUN_COLUMNS = (
    ("workload", "start", "seq", "duration_h")
    + REQUEST_COLUMNS
    + USAGE_COLUMNS
    + ("gpu_mem_total_mib",)
)
# Sample interval of the reference traces: Bitbrains (daily runs) 5 min, GenAI (hourly) 1 min.
SAMPLE_MINUTES = {"day": 5.0, "hour": 1.0}
DEFAULT_SAMPLE_MINUTES = 5.0


class TraceError(ValueError):
    """The input cannot be read as a history of runs."""


class RunSource(Protocol):
    """Anything that yields a normalized run table; ``name`` says where it came from."""

    name: str

    def load(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class TraceFile:
    """A CSV or CSV.gz file of run summaries."""

    path: Path
    gpu_memory_mib: float = DEFAULT_GPU_MEMORY_MIB
    sample_minutes: float | None = None

    @property
    def name(self) -> str:
        return str(self.path)

    def load(self) -> pd.DataFrame:
        try:
            raw = pd.read_csv(self.path)
        except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise TraceError(f"cannot read {self.path}: {exc}") from exc
        return normalize(
            raw, gpu_memory_mib=self.gpu_memory_mib, sample_minutes=self.sample_minutes
        )


def normalize(
    raw: pd.DataFrame,
    *,
    gpu_memory_mib: float = DEFAULT_GPU_MEMORY_MIB,
    sample_minutes: float | None = None,
) -> pd.DataFrame:
    """The normalized run table of a run-summary table (see the module docstring)."""
    if "workload" not in raw:
        raise TraceError("the trace has no `workload` column")
    time_column = next((c for c in TIME_COLUMNS if c in raw), None)
    if time_column is None:
        raise TraceError(f"the trace has no time column (one of {', '.join(TIME_COLUMNS)})")
    table = pd.DataFrame(
        {
            "workload": raw["workload"].astype(str),
            "start": _start(raw[time_column], time_column),
            "seq": np.arange(len(raw)),
            "duration_h": _duration_h(raw, time_column, sample_minutes),
        }
    )
    for column in USAGE_COLUMNS + ("req_cpu", "req_memory_mib"):
        table[column] = _numbers(raw, column)
    on_gpu = table["gpu_mem_mib_max"].notna()
    card = _numbers(raw, "gpu_mem_total_mib").fillna(gpu_memory_mib)
    table["gpu_mem_total_mib"] = card.where(on_gpu)
    table["req_gpu"] = _numbers(raw, "req_gpu").fillna(1.0).where(on_gpu)
    table["req_gpu_memory_mib"] = table["req_gpu"] * table["gpu_mem_total_mib"]
    return check_normalized(table)


def check_normalized(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the run columns in order and rows sorted; raises if it cannot be."""
    missing = [c for c in RUN_COLUMNS if c not in table]
    if missing:
        raise TraceError(f"the run table lacks {', '.join(missing)}")
    if not isinstance(table["start"].dtype, pd.DatetimeTZDtype):
        raise TraceError("`start` must be a timezone-aware datetime column")
    if table["start"].isna().any() or table["duration_h"].isna().any():
        raise TraceError("every run needs a start time and a duration")
    ordered = table.loc[:, list(RUN_COLUMNS)].sort_values(
        ["workload", "start", "seq"], kind="stable"
    )
    return ordered.reset_index(drop=True)


def _start(values: pd.Series, column: str) -> pd.Series:
    try:
        if column == "hour" and pd.api.types.is_numeric_dtype(values):
            return pd.to_datetime(values.astype(float) * 3600.0, unit="s", utc=True)
        if pd.api.types.is_numeric_dtype(values):
            return pd.to_datetime(values.astype(float), unit="s", utc=True)
        return pd.to_datetime(values, utc=True)
    except (ValueError, TypeError) as exc:
        raise TraceError(f"cannot read `{column}` as times: {exc}") from exc


def _duration_h(raw: pd.DataFrame, time_column: str, sample_minutes: float | None) -> pd.Series:
    if "duration_s" in raw:
        return _numbers(raw, "duration_s") / 3600.0
    if "samples" not in raw:
        raise TraceError("the trace needs `duration_s` or `samples` to know how long runs were")
    minutes = sample_minutes or SAMPLE_MINUTES.get(time_column, DEFAULT_SAMPLE_MINUTES)
    return _numbers(raw, "samples") * minutes / 60.0


def _numbers(raw: pd.DataFrame, column: str) -> pd.Series:
    if column not in raw:
        return pd.Series(np.nan, index=raw.index, dtype=float)
    return pd.to_numeric(raw[column], errors="coerce").astype(float)
