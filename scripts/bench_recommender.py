"""Measure the learned recommender: fit time on a trace, and the time to size one job.

    .venv/bin/python scripts/bench_recommender.py [--trace ../shared/data/bitbrains/runs.csv.gz]

Prints the seconds to build the training examples and fit every resource's model on
all runs of the trace (target < 60 s for Bitbrains' 27,273 runs), then the time the
``learned_peak`` optimizer takes to size one job with three roles and ten earlier runs
each (target < 5 ms): median and 99th percentile over 500 calls, one at a time. The
load average is printed before and after: the machine's other work shows in the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brain.domain import JobStatus, Limits, Resources, RoleSpec, Stage, Strategy
from brain.learned_sizing.training import train
from brain.optimizing import HistoricalJob, JobView, NodeUsage, OptimizerContext
from brain.replay.trace import TraceFile
from optimizers.learned_peak import LearnedPeakOptimizer, LearnedPeakSettings

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared/data/bitbrains/runs.csv.gz"
ROLES = {
    "ps": RoleSpec(count=2, cpu=8, memory_mib=16384),
    "chief": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=8, cpu=8, memory_mib=32768),
}


def job(uid: str, start: datetime, finished: bool) -> JobView:
    return JobView(
        uid=uid,
        name="bench",
        user="bench",
        dataset=None,
        group_key="bench/bench",
        strategy=Strategy.ps,
        status=JobStatus.succeeded if finished else JobStatus.pending,
        limits=Limits(),
        roles=dict(ROLES),
        created_at=start,
        started_at=start,
        finished_at=start + timedelta(hours=2) if finished else None,
    )


def history(now: datetime) -> list[HistoricalJob]:
    runs = []
    for i in range(10):
        start = now - timedelta(days=i + 1)
        nodes = tuple(
            NodeUsage(
                name=f"{role}-{n}",
                role=role,
                requested=Resources(cpu=spec.cpu, memory_mib=spec.memory_mib, gpu=0),
                cpu_mean=spec.cpu * 0.3,
                cpu_max=spec.cpu * (0.6 + 0.02 * i),
                cpu_p95=spec.cpu * (0.5 + 0.02 * i),
                memory_mean_mib=spec.memory_mib * 0.3,
                memory_max_mib=spec.memory_mib * (0.4 + 0.01 * n + 0.01 * i),
            )
            for role, spec in ROLES.items()
            for n in range(min(spec.count, 4))
        )
        runs.append(HistoricalJob(job(f"bench-{i}", start, True), nodes))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    started = time.perf_counter()
    table = TraceFile(args.trace).load()
    loaded = time.perf_counter()
    model = train(table)
    fitted = time.perf_counter()
    print(f"trace: {len(table)} runs of {table['workload'].nunique()} workloads")
    print(f"load {loaded - started:.1f} s; features + fit + calibration {fitted - loaded:.1f} s")
    for name, resource in model.resources.items():
        print(f"  {name}: {resource.parts}")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    context = OptimizerContext(
        stage=Stage.create,
        now=now,
        job=job("next", now, False),
        history=history(now),
        sizing_model=model,
    )
    optimizer, settings = LearnedPeakOptimizer(), LearnedPeakSettings()
    for _ in range(20):  # warm up
        optimizer.propose(context, settings)
    timings = []
    for _ in range(500):
        t0 = time.perf_counter()
        optimizer.propose(context, settings)
        timings.append((time.perf_counter() - t0) * 1000)
    timings.sort()
    print(
        f"sizing one job (3 roles, 10 earlier runs): median {statistics.median(timings):.2f} ms, "
        f"p99 {timings[int(len(timings) * 0.99) - 1]:.2f} ms over {len(timings)} calls"
    )
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
