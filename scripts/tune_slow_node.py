"""Tune and measure the slow_node optimizer on real per-worker mini-batch times.

Data (``stragglers/`` of ../shared/data, Alibaba PAI, Weng et al. NSDI'22):
- ``job_N_norm.csv``: a normalized batch time of each of 10 workers every 10 iterations.
  Each record becomes one node sample, ``SAMPLE_S`` seconds apart, so a 120 s window
  holds 8 records. The detector (``find_slow_nodes``, the optimizer's own code) is run
  at every record; a record is *flagged* when some worker would be replaced there.
- ``coefficient_variation.csv``: the coefficient of variation (CV) across the 10
  workers at each iteration of 100 jobs; no per-worker values. A worker at ``r`` x the
  others gives CV = sqrt(10/9) x 3(r - 1) / (9 + r) (sample standard deviation); an
  iteration below that CV cannot hold a lone worker at ``r`` x the others, so the share
  of iterations at or above it bounds what the detector could flag there, and a job
  counts when such iterations run for as long as the detector's windows.

Tuning and reporting periods differ: the defaults are chosen on the first half of each
per-worker job's records and on CV jobs 00-49; the figures are reported on the second
halves and on jobs 50-99. Slowdowns of 1.5x and 2x are injected into worker 0 of jobs
1-3 (no straggler of their own) a quarter into each period to measure detection delay.

Usage: python scripts/tune_slow_node.py [../shared/data/stragglers]
"""

from __future__ import annotations

import csv
import math
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brain.optimizing import NodeSample
from optimizers.slow_node import SlowNodeSettings, find_slow_nodes

SAMPLE_S = 15  # seconds between two records (the simulator's sampling interval)
ORIGIN = datetime(2026, 1, 1, tzinfo=UTC)
Records = list[dict[str, float]]  # per record: worker -> normalized batch time


def load_job(path: Path) -> Records:
    by_time: dict[int, dict[str, float]] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            by_time.setdefault(int(row["time"]), {})[row["worker"]] = float(row["batch_time_norm"])
    return [by_time[t] for t in sorted(by_time)]


def to_samples(records: Records) -> list[list[NodeSample]]:
    return [
        [
            NodeSample(f"worker-{w}", ORIGIN + timedelta(seconds=SAMPLE_S * i), 0, 0, step_time_s=v)
            for w, v in record.items()
            if v > 0
        ]
        for i, record in enumerate(records)
    ]


def flags(records: Records, settings: SlowNodeSettings, start: int, end: int) -> list[bool]:
    """For each record in [start, end): whether the detector replaces a worker there."""
    samples = to_samples(records)
    span = math.ceil(settings.windows * settings.window_s / SAMPLE_S)
    out = []
    for i in range(start, end):
        window = [s for rec in samples[max(i - span + 1, 0) : i + 1] for s in rec]
        now = ORIGIN + timedelta(seconds=SAMPLE_S * i)
        out.append(bool(find_slow_nodes(window, {}, now, settings)))
    return out


def injected_delay(
    records: Records, factor: float, settings: SlowNodeSettings, half: str
) -> float | None:
    """Seconds from worker 0 slowing by ``factor`` (at the first quarter of the half) to
    its first flag within the half; None if never."""
    mid = len(records) // 2
    start, end = (0, mid) if half == "tune" else (mid, len(records))
    onset = start + (end - start) // 4
    slowed = [
        {w: v * factor if (w == "0" and i >= onset) else v for w, v in rec.items()}
        for i, rec in enumerate(records)
    ]
    for offset, flagged in enumerate(flags(slowed, settings, onset, end)):
        if flagged:
            return offset * SAMPLE_S
    return None


def cv_bound(ratio: float, workers: int = 10) -> float:
    return math.sqrt(workers / (workers - 1)) * 3 * (ratio - 1) / (workers - 1 + ratio)


def load_cv(path: Path) -> dict[str, list[float]]:
    with path.open() as f:
        rows = list(csv.reader(f))
    return {r[0]: [float(x) for x in r[1:] if x != ""] for r in rows[1:]}


def cv_figures(cvs: dict[str, list[float]], settings: SlowNodeSettings) -> tuple[float, float]:
    """(share of iterations at or above the bound, share of jobs with a long enough run)."""
    bound = cv_bound(settings.threshold)
    run_needed = math.ceil(settings.windows * settings.window_s / SAMPLE_S)
    over = total = jobs = 0
    for values in cvs.values():
        run = longest = 0
        for v in values:
            run = run + 1 if v >= bound else 0
            longest = max(longest, run)
        over += sum(v >= bound for v in values)
        total += len(values)
        jobs += longest >= run_needed
    return over / total, jobs / len(cvs)


def report(data: Path, settings: SlowNodeSettings, half: str) -> None:
    flagged = total = 0
    per_job = []
    for n in range(1, 5):
        records = load_job(data / f"job_{n}_norm.csv")
        mid = len(records) // 2
        start, end = (0, mid) if half == "tune" else (mid, len(records))
        f = flags(records, settings, start, end)
        flagged += sum(f)
        total += len(f)
        per_job.append(f"job_{n} {sum(f)}/{len(f)}")
    cvs = load_cv(data / "coefficient_variation.csv")
    names = sorted(cvs)
    part = names[:50] if half == "tune" else names[50:]
    iters, jobs = cv_figures({k: cvs[k] for k in part}, settings)
    print(
        f"  {half}: per-worker records flagged {flagged}/{total} ({flagged / total:.1%}; "
        f"{', '.join(per_job)}); CV iterations over the bound {iters:.1%}, CV jobs {jobs:.0%}"
    )
    for factor in (1.5, 2.0):
        delays = [
            injected_delay(load_job(data / f"job_{n}_norm.csv"), factor, settings, half)
            for n in (1, 2, 3)
        ]
        print(
            f"    {factor:g}x slowdown injected in worker 0 of jobs 1-3: flagged after {delays} s"
        )


def main() -> None:
    data = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/stragglers")
    grid = [SlowNodeSettings(threshold=t, windows=w) for t in (1.3, 1.5, 2.0) for w in (2, 3, 4)]
    defaults = SlowNodeSettings()
    for settings in [*grid, defaults]:
        label = "defaults" if settings is defaults else "candidate"
        print(f"{label}: threshold {settings.threshold:g}x, {settings.windows} windows")
        report(data, settings, "tune")
        if settings is defaults:
            report(data, settings, "report")


if __name__ == "__main__":
    main()
