"""Benchmark the console's heaviest pages on bench_history.py's history: a job page
(portrait, charts, plan timeline, events), the jobs list (filtered, sorted by waste
or efficiency, paged) and the overview (a 7-, 30- or 90-day window's totals, top wasters
and weekly trends, or the whole history's from its first day), served by `brain serve`
on 127.0.0.1 (target: p99 <= 50 ms).

Loads and summarizes the same history as scripts/bench_history.py (its functions and
options), then times GET /ui/jobs/{uid}, GET /ui/jobs?... and GET /ui/?... over HTTP on
loopback with concurrent clients, and prints p50, p99, the CPU per request and the load average (the
figures mean little on a busy machine: say under what load they were taken).

    .venv/bin/python scripts/bench_console.py                 # 10,000 jobs (~15 min)
    .venv/bin/python scripts/bench_console.py --jobs 2000 --samples 1000000 --requests 300
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import numpy as np
from bench_history import (
    HISTORY_DAYS,
    api_server,
    backfill,
    bench_database,
    load_history,
    measure,
    parse_args,
    raw_connect,
)

P99_TARGET_MS = 50.0
WINDOW_DAYS = (7, 30, 90)
SORTS = ("newest", "gpu_waste", "cpu_waste", "memory_waste", "efficiency")


def console_workloads(rng, groups, uids: list[str], n: int) -> dict[str, list[str]]:
    def jobs_list() -> str:
        group = groups[rng.integers(len(groups))]
        filters = [
            {},
            {"user": group.user},
            {"dataset": group.dataset},
            {"group": group.key},
            {"gpu_type": group.gpu_type or "A100"},
            {"status": "succeeded", "user": group.user},
        ][rng.integers(6)]
        query = {**filters, "sort": SORTS[rng.integers(len(SORTS))], "page": rng.integers(1, 4)}
        return "/ui/jobs?" + urlencode(query)

    # The whole history: every job, in 26 or 27 weekly rows.
    whole = f"/ui/?from={(datetime.now(UTC) - timedelta(days=HISTORY_DAYS)).date()}"

    def overview() -> str:
        windows = [f"/ui/?days={days}" for days in WINDOW_DAYS] + [whole]
        return windows[rng.integers(len(windows))]

    return {
        "job page": [f"/ui/jobs/{uids[rng.integers(len(uids))]}" for _ in range(n)],
        "jobs list": [jobs_list() for _ in range(n)],
        "overview": [overview() for _ in range(n)],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, description=__doc__)
    rng = np.random.default_rng(args.seed)
    with bench_database(args) as url:
        print("loading history (COPY)")
        started = time.perf_counter()
        groups, uids = load_history(url, args, rng)
        print(f"  loaded {len(uids):,} jobs in {time.perf_counter() - started:.0f} s")
        print("summarizing")
        backfill(url, uids, args.summarize_workers)
        with raw_connect(url) as conn:
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
        loads = console_workloads(rng, groups, uids, args.requests)
        with api_server(url, args.server_workers) as server:
            for clients in args.clients:
                for paths in loads.values():  # warm up: connections, caches, templates
                    measure(server, paths[: max(len(paths) // 10, 10)], clients)
                print(f"{clients} client(s), {args.requests} requests per page")
                for name, paths in loads.items():
                    r = measure(server, paths, clients)
                    verdict = "meets" if r["p99"] <= P99_TARGET_MS else "misses"
                    print(
                        f"  {name:10s} p50 {r['p50']:6.1f} ms  p99 {r['p99']:6.1f} ms ({verdict} "
                        f"{P99_TARGET_MS:g})  {r['rps']:6.1f} req/s  server CPU "
                        f"{r['server_cpu_ms']:.1f} ms, PostgreSQL CPU {r['pg_cpu_ms']:.1f} ms "
                        "per request"
                    )
        print(f"load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
