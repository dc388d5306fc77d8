"""Time the savings report on the benchmark history (10,000 finished jobs, 5M samples).

    .venv/bin/python scripts/bench_savings.py [--jobs 10000 --samples 5000000]

Loads the history of scripts/bench_history.py into a fresh PostgreSQL database,
summarizes it, stores each job's replay with its summary (as the summary refresher of
`brain serve` does; timed apart), then times `GET /api/v1/savings` (in-process, every
job of the history) three times and prints the load average; the database is dropped
unless --keep.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_history  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.config import Settings
    from brain.db.engine import make_engine, make_session_factory
    from brain.optimizing import load_registry
    from brain.savings.stored import store_pending_savings

    args = bench_history.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    with bench_history.bench_database(args) as url:
        started = time.perf_counter()
        _, uids = bench_history.load_history(url, args, rng)
        print(f"loaded {len(uids)} jobs in {time.perf_counter() - started:.0f} s")
        bench_history.backfill(url, uids, args.summarize_workers)
        days = bench_history.HISTORY_DAYS + 1
        settings = Settings(database_url=url)
        engine = make_engine(url)
        try:
            before = " ".join(f"{x:.2f}" for x in os.getloadavg())
            began = time.perf_counter()
            stored = store_pending_savings(make_session_factory(engine), settings, load_registry())
            print(
                f"stored the replay of {stored} jobs in {time.perf_counter() - began:.0f} s "
                f"(load average before {before})"
            )
        finally:
            engine.dispose()
        with TestClient(create_app(settings)) as client:
            seconds = []
            for _ in range(3):
                before = " ".join(f"{x:.2f}" for x in os.getloadavg())
                began = time.perf_counter()
                answer = client.get("/api/v1/savings", params={"days": days})
                seconds.append(time.perf_counter() - began)
                answer.raise_for_status()
                total = answer.json()["total"]
                print(
                    f"GET /api/v1/savings?days={days}: {seconds[-1]:.1f} s, "
                    f"{total['jobs']} jobs ({total['replayed_jobs']} replayed), "
                    f"load average before {before}"
                )
            print(f"median {statistics.median(seconds):.1f} s (target < 5 s)")
            print(
                f"brain would allocate {total['brain_core_h']:.0f} of "
                f"{total['requested_core_h']:.0f} requested core-hours, "
                f"{total['brain_gib_h']:.0f} of {total['requested_gib_h']:.0f} GiB-hours"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
