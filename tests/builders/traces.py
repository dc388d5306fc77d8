"""Traces of runs, as ``brain.replay.trace.normalize`` reads a site's (one row per run):
written out row by row so the expected figures can be worked out by hand, daily runs
from given peaks, or daily runs drawn at random around a scale per workload; and one
workload's daily runs with their samples attached (``one_workload``), for the loop replay."""

from __future__ import annotations

import numpy as np
import pandas as pd

from brain.replay.series import RunSeries, attach
from brain.replay.trace import normalize

DAY = 86400
START = int(pd.Timestamp("2024-01-01", tz="UTC").timestamp())


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


def daily_runs(
    memory_peaks: dict[str, list[float]],
    cpu_peaks: dict[str, list[float]] | None = None,
    *,
    req_cpu: float = 2.0,
    req_memory_mib: float = 5000.0,
) -> pd.DataFrame:
    """One run a day from 2024-01-01 per workload: its memory peak in MiB (the mean half
    of it) and, given ``cpu_peaks``, its CPU p95 in cores (the mean a third of it, the
    maximum 1.2 times); without, CPU use is small and the same in every run."""
    rows = []
    for workload, peaks in memory_peaks.items():
        cpus = cpu_peaks[workload] if cpu_peaks is not None else [None] * len(peaks)
        for day, (memory, cpu) in enumerate(zip(peaks, cpus, strict=True)):
            rows.append(
                {
                    "workload": workload,
                    "day": str((pd.Timestamp("2024-01-01") + pd.Timedelta(days=day)).date()),
                    "samples": 288,
                    "req_cpu": req_cpu,
                    "req_memory_mib": req_memory_mib,
                    "cpu_mean": 0.1 if cpu is None else cpu / 3,
                    "cpu_p95": 0.5 if cpu is None else cpu,
                    "cpu_max": 0.6 if cpu is None else cpu * 1.2,
                    "mem_mean": memory / 2,
                    "mem_max": memory,
                }
            )
    return normalize(pd.DataFrame(rows))


def random_runs(workloads: int = 40, runs: int = 12, seed: int = 7) -> pd.DataFrame:
    """Each workload has its own scale (memory 500-4000 MiB, CPU 0.2-3 cores); each run's
    peaks are that scale times a lognormal(0, 0.3) draw. Requests: 4 cores, 8192 MiB."""
    rng = np.random.default_rng(seed)
    memory_peaks: dict[str, list[float]] = {}
    cpu_peaks: dict[str, list[float]] = {}
    for w in range(workloads):
        memory, cpu = rng.uniform(500, 4000), rng.uniform(0.2, 3.0)
        drawn = [(memory * rng.lognormal(0, 0.3), cpu * rng.lognormal(0, 0.3)) for _ in range(runs)]
        memory_peaks[f"w{w}"] = [m for m, _ in drawn]
        cpu_peaks[f"w{w}"] = [c for _, c in drawn]
    return daily_runs(memory_peaks, cpu_peaks, req_cpu=4.0, req_memory_mib=8192.0)


def random_memory_runs(workloads: int, runs: int, seed: int) -> pd.DataFrame:
    """Each workload has its own memory scale (500-4000 MiB); each run's peak is that
    scale times a lognormal(0, 0.3) draw. Workloads are named after the seed."""
    rng = np.random.default_rng(seed)
    return daily_runs(
        {
            f"w{seed}-{w}": list(rng.uniform(500, 4000) * rng.lognormal(0, 0.3, runs))
            for w in range(workloads)
        }
    )


def one_workload(
    days: list[dict], series: list[list[tuple[int, float, float]]], sample_s: float = 300.0
) -> tuple[pd.DataFrame, RunSeries]:
    """A run table of one workload ``w`` (one row per day from ``START``) and its series:
    per day, (seconds into the day, cpu, mem_mib) samples."""
    table = trace(
        [{"workload": "w", "day": f"2024-01-0{i + 1}", **row} for i, row in enumerate(days)]
    )
    rows = [
        {"workload": "w", "ts": START + i * DAY + s, "cpu": cpu, "mem_mib": mem}
        for i, day in enumerate(series)
        for s, cpu, mem in day
    ]
    return table, attach(table, pd.DataFrame(rows), period_s=DAY, sample_s=sample_s)
