"""Load: N simulated job masters against `brain serve` on PostgreSQL, on loopback.

Each master registers its job (PUT), pushes a 10-node batch of samples every 15 s
(POST .../samples) and keeps one long-poll for plans open (GET .../plans/latest?after=
ID&wait=30) the whole time, as a DLRover job master does. Masters start spread over the
first interval. Levels run one after the other against one server, each for a bounded
time; per level the script prints requests, errors and p50/p99 latency per endpoint,
the server's CPU use, and at the end the first level that degrades (any error, or the
samples push p99 above --p99-limit seconds). The client runs on the same machine and
its CPU use is printed too.

    .venv/bin/python scripts/bench_load.py [--levels 500] [--duration 150]
        [--pg postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
import psycopg

NODES_PER_BATCH = 10
PUSH_INTERVAL_S = 15.0
POLL_WAIT_S = 30
DRAIN_S = POLL_WAIT_S + 15


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter = field(default_factory=Counter)

    def merge(self, other: Stats) -> None:
        for label, values in other.latencies.items():
            self.latencies.setdefault(label, []).extend(values)
        self.errors.update(other.errors)

    async def timed(self, label: str, request) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = await request
        except httpx.HTTPError as exc:
            self.errors[f"{label}: {type(exc).__name__}"] += 1
            return None
        self.latencies.setdefault(label, []).append(time.perf_counter() - started)
        if response.status_code >= 400:
            self.errors[f"{label}: {response.status_code}"] += 1
        return response


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="server")
    parser.add_argument(
        "--levels", default="500", help="comma-separated numbers of job masters (default 500)"
    )
    parser.add_argument("--duration", type=float, default=150, help="seconds per level")
    parser.add_argument(
        "--p99-limit", type=float, default=1.0, help="samples p99 (s) above which it degrades"
    )
    parser.add_argument(
        "--client-processes", type=int, default=2, help="processes the masters are dealt to"
    )
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]

    dbname = f"brain_load_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    url = f"{args.pg.replace('postgresql://', 'postgresql+psycopg://')}/{dbname}"
    try:
        return run(url, levels, args.duration, args.p99_limit, args.client_processes)
    finally:
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def run(
    url: str, levels: list[int], duration: float, p99_limit: float, client_processes: int
) -> int:
    port = _free_port()
    env = {
        **os.environ,
        "BRAIN_DATABASE_URL": url,
        "BRAIN_HOST": "127.0.0.1",
        "BRAIN_PORT": str(port),
        "BRAIN_LOG_LEVEL": "warning",
    }
    base = f"http://127.0.0.1:{port}"
    degraded_at = None
    with tempfile.NamedTemporaryFile("w+", prefix="brain-load-", suffix=".log") as server_log:
        server = subprocess.Popen(
            [sys.executable, "-m", "api.main", "serve", "--migrate"],
            env=env,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_ready(base)
            for masters in levels:
                cpu_before = _cpu_seconds(server.pid)
                client_before = _children_cpu_seconds()
                started = time.monotonic()
                stats = _level(base, masters, duration, client_processes)
                elapsed = time.monotonic() - started
                server_cores = (_cpu_seconds(server.pid) - cpu_before) / elapsed
                client_cores = (_children_cpu_seconds() - client_before) / elapsed
                _report(masters, elapsed, stats, server_cores, client_cores)
                p99 = _quantile(stats.latencies.get("POST samples", []), 0.99)
                if degraded_at is None and (stats.errors or p99 > p99_limit):
                    degraded_at = masters
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
            server_log.seek(0)
            print(f"server log: {server_log.read().count('Traceback')} tracebacks")
    if degraded_at is None:
        print(f"no level degraded (errors 0, samples p99 <= {p99_limit:g} s)")
    else:
        print(f"degrades at {degraded_at} masters (errors, or samples p99 > {p99_limit:g} s)")
    return 0


def _level(base: str, masters: int, duration: float, processes: int) -> Stats:
    """The masters, dealt round-robin to ``processes`` client processes."""
    stop_at = time.monotonic() + duration  # CLOCK_MONOTONIC: shared by the processes
    run_id = uuid.uuid4().hex[:6]
    shares = [(base, masters, duration, stop_at, run_id, p, processes) for p in range(processes)]
    stats = Stats()
    with ProcessPoolExecutor(processes) as pool:
        for part in pool.map(_client_process, shares):
            stats.merge(part)
    return stats


def _client_process(share: tuple) -> Stats:
    return asyncio.run(_masters(*share))


async def _masters(
    base: str, masters: int, duration: float, stop_at: float, run_id: str, first: int, step: int
) -> Stats:
    stats = Stats()
    tasks = [
        asyncio.create_task(
            _master(base, stats, f"load-{run_id}-{i}", PUSH_INTERVAL_S * i / masters, stop_at)
        )
        for i in range(first, masters, step)
    ]
    # Bounded: what has not finished a grace period after the end is cut and counted.
    remaining = stop_at - time.monotonic()
    _, unfinished = await asyncio.wait(tasks, timeout=remaining + DRAIN_S)
    for task in unfinished:
        task.cancel()
    if unfinished:
        stats.errors["master still waiting at the end (cut)"] += len(unfinished)
    await asyncio.gather(*unfinished, return_exceptions=True)
    return stats


async def _master(base: str, stats: Stats, uid: str, delay: float, stop_at: float) -> None:
    # Each master has its own client, as separate job-master processes would: one
    # client shared by hundreds of connections spends its time in its own pool.
    await asyncio.sleep(delay)
    limits = httpx.Limits(max_connections=2)
    timeout = httpx.Timeout(POLL_WAIT_S + 30)
    # One TLS context for every client of the process: httpx builds one per client
    # otherwise, loading the CA store each time, and hundreds of masters would keep the
    # client's event loop busy while requests wait (plain HTTP needs none).
    client = httpx.AsyncClient(
        base_url=base, limits=limits, timeout=timeout, verify=_shared_tls_context()
    )
    async with client as http:
        await _drive(http, stats, uid, stop_at)


@functools.cache
def _shared_tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


async def _drive(http: httpx.AsyncClient, stats: Stats, uid: str, stop_at: float) -> None:
    job = {
        "name": "load",
        "user": "bench",
        "status": "running",
        "roles": {"worker": {"count": NODES_PER_BATCH, "cpu": 4, "memory_mib": 8192}},
    }
    response = await stats.timed("PUT job", http.put(f"/api/v1/jobs/{uid}", json=job))
    if response is None or response.status_code >= 400:
        return
    poller = asyncio.create_task(_long_poll(http, stats, uid, stop_at))
    step = 0
    next_push = time.monotonic()
    while next_push < stop_at:
        await stats.timed(
            "POST samples", http.post(f"/api/v1/jobs/{uid}/samples", json=_batch(uid, step))
        )
        step += 1
        next_push += PUSH_INTERVAL_S
        await asyncio.sleep(max(0.0, min(next_push, stop_at) - time.monotonic()))
    await poller


async def _long_poll(http: httpx.AsyncClient, stats: Stats, uid: str, stop_at: float) -> None:
    after = 0
    while (remaining := stop_at - time.monotonic()) > 1:
        wait = min(POLL_WAIT_S, int(remaining))
        response = await stats.timed(
            "GET plans/latest (long-poll)",
            http.get(f"/api/v1/jobs/{uid}/plans/latest", params={"after": after, "wait": wait}),
        )
        if response is None:
            await asyncio.sleep(1)
        elif response.status_code == 200:
            after = response.json()["id"]


def _batch(uid: str, step: int) -> dict:
    now = datetime.now(UTC).isoformat()
    return {
        "nodes": [
            {
                "name": f"{uid}-edljob-worker-{n}",
                "role": "worker",
                "index": n,
                "ts": now,
                "cpu": 2.0 + (step % 7) / 10,
                "memory_mib": 4096.0 + n,
                "gpu_util": 0.5,
            }
            for n in range(NODES_PER_BATCH)
        ]
    }


def _report(masters: int, elapsed: float, stats: Stats, server: float, client: float) -> None:
    total = sum(len(v) for v in stats.latencies.values())
    print(
        f"\n{masters} masters, {elapsed:.0f} s: {total} requests ({total / elapsed:.1f}/s), "
        f"{sum(stats.errors.values())} errors; server {server:.2f} cores, client {client:.2f}"
    )
    print(f"  {'endpoint':32} {'requests':>9} {'p50 ms':>9} {'p99 ms':>9}")
    for label, values in sorted(stats.latencies.items()):
        p50, p99 = _quantile(values, 0.5) * 1000, _quantile(values, 0.99) * 1000
        print(f"  {label:32} {len(values):9d} {p50:9.1f} {p99:9.1f}")
    for error, count in stats.errors.most_common():
        print(f"  error {error}: {count}")


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _cpu_seconds(pid: int) -> float:
    """CPU of the server: the process and its children (`brain serve`'s workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(_cpu_seconds(child) for child in _children(pid))


def _children(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


def _children_cpu_seconds() -> float:
    """CPU of the client processes that have ended (each level's pool ends with it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(base: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError("brain serve did not become ready in 180 s")


if __name__ == "__main__":
    sys.exit(main())
