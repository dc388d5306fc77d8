"""Ingest speed: points/s through the API against raw COPY of the same rows.

In one run against PostgreSQL: starts `brain serve --workers N` (loopback only) on a fresh
database, pushes batches of 5,000 node points from 4 concurrent clients, then COPYs
the same rows straight into node_samples, and prints both rates and their ratio, and
the CPU spent per point (server processes and the database's PostgreSQL backends, read
from /proc), which unlike the rates does not depend on what else the machine runs.
Bounded: --batches batches in all (default 120, i.e. 600,000 points).

    .venv/bin/python scripts/bench_ingest.py [--pg postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import psycopg
from proc_cpu import backends_cpu_seconds, backends_cpu_since, process_cpu_seconds, tree_cpu_seconds

BATCH_POINTS = 5_000
CLIENTS = 4
NODES_PER_JOB = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="server")
    parser.add_argument("--batches", type=int, default=120, help="batches pushed in all")
    parser.add_argument("--workers", type=int, default=2, help="brain serve's worker processes")
    args = parser.parse_args()

    dbname = f"brain_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    url = f"{args.pg.replace('postgresql://', 'postgresql+psycopg://')}/{dbname}"
    try:
        return run(url, f"{args.pg}/{dbname}", args.batches, args.workers)
    finally:
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def run(url: str, dsn: str, batches: int, workers: int) -> int:
    env = {**os.environ, "BRAIN_DATABASE_URL": url, "BRAIN_LOG_LEVEL": "warning"}
    subprocess.run(
        [sys.executable, "-m", "api.main", "db", "upgrade"],
        env=env,
        check=True,
        capture_output=True,
    )
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "api.main", "serve", "--port", str(port)]
        + ["--workers", str(workers)],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base)
        bodies = _bodies(batches)
        with httpx.Client(base_url=base) as http:
            for job in range(batches // 10 + 1):
                http.put(f"/api/v1/jobs/bench-{job}", json={"name": "bench", "user": "bench"})
        server_before, pg_before = tree_cpu_seconds(server.pid), backends_cpu_seconds(dsn)
        api_rate = _push(base, bodies)
        server_us = (
            (tree_cpu_seconds(server.pid) - server_before) / len(bodies) / BATCH_POINTS * 1e6
        )
        pg_us = backends_cpu_since(dsn, pg_before) / len(bodies) / BATCH_POINTS * 1e6
    finally:
        server.terminate()
        server.wait(timeout=30)
    copy_rate, copy_us = _copy(dsn, bodies)
    print(
        f"API ingest : {api_rate:12,.0f} points/s  ({batches} batches x {BATCH_POINTS} points,"
        f" {CLIENTS} clients, {workers} server workers)"
    )
    print(f"raw COPY   : {copy_rate:12,.0f} rows/s    (same rows, same table)")
    print(f"ratio      : {api_rate / copy_rate:12.2f}  (target >= 0.60)")
    print(
        f"CPU/point  : API {server_us + pg_us:.1f} us (server {server_us:.1f} + PostgreSQL"
        f" {pg_us:.1f}), raw COPY {copy_us:.1f} us (PostgreSQL)"
    )
    return 0


def _bodies(batches: int) -> list[tuple[str, bytes]]:
    """Pre-encoded request bodies: 10 batches per job, 100 nodes x 50 instants each."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    bodies = []
    for b in range(batches):
        job = f"bench-{b // 10}"
        offset = (b % 10) * 50
        points = [
            {
                "name": f"{job}-edljob-worker-{n}",
                "role": "worker",
                "index": n,
                "ts": (start + timedelta(seconds=15 * (offset + t))).isoformat(),
                "cpu": 1.0 + n / 100,
                "memory_mib": 1024.0 + t,
                "gpu_util": 0.5,
            }
            for t in range(BATCH_POINTS // NODES_PER_JOB)
            for n in range(NODES_PER_JOB)
        ]
        bodies.append((job, json.dumps({"nodes": points}).encode()))
    return bodies


def _push(base: str, bodies: list[tuple[str, bytes]]) -> float:
    def push(chunk: list[tuple[str, bytes]]) -> int:
        stored = 0
        with httpx.Client(base_url=base, timeout=120) as http:
            for job, body in chunk:
                response = http.post(
                    f"/api/v1/jobs/{job}/samples",
                    content=body,
                    headers={"content-type": "application/json"},
                )
                response.raise_for_status()
                stored += response.json()["accepted"]
        return stored

    chunks = [bodies[i::CLIENTS] for i in range(CLIENTS)]
    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        stored = sum(pool.map(push, chunks))
    elapsed = time.perf_counter() - started
    assert stored == len(bodies) * BATCH_POINTS, stored
    return stored / elapsed


def _copy(dsn: str, bodies: list[tuple[str, bytes]]) -> tuple[float, float]:
    """COPY the same rows, pre-formatted as COPY text outside the timer: the fastest path.
    Returns rows/s and the backend's CPU microseconds per row."""
    with psycopg.connect(dsn) as conn:
        node_ids = dict(conn.execute("SELECT name, id FROM nodes").fetchall())
        job_ids = dict(conn.execute("SELECT uid, id FROM jobs").fetchall())
        lines = []
        for job, body in bodies:
            for p in json.loads(body)["nodes"]:
                row = (
                    node_ids[p["name"]],
                    p["ts"],
                    job_ids[job],
                    p["cpu"],
                    p["memory_mib"],
                    p["gpu_util"],
                )
                lines.append("\t".join(map(str, row)))
        data = ("\n".join(lines) + "\n").encode()
        conn.execute("TRUNCATE node_samples")
        conn.commit()
        backend = conn.info.backend_pid
        cpu_before = process_cpu_seconds(backend)
        started = time.perf_counter()
        with conn.cursor().copy(
            "COPY node_samples (node_id, ts, job_id, cpu, memory_mib, gpu_util) FROM STDIN"
        ) as copy:
            copy.write(data)
        conn.commit()
        elapsed = time.perf_counter() - started
        cpu_us = (process_cpu_seconds(backend) - cpu_before) / len(lines) * 1e6
        return len(lines) / elapsed, cpu_us


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(base: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError("Brain did not become ready")


if __name__ == "__main__":
    sys.exit(main())
