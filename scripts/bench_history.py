"""Benchmark history queries on a large PostgreSQL history.

Creates a database, loads a realistic history with COPY (finished jobs of recurring
groups with several roles, millions of raw node samples), summarizes it, times
summarizing one large job, then serves the API with `brain serve` on 127.0.0.1 and measures
latency of suggestions and portraits under concurrent clients. The database is dropped
at the end unless --keep.

Each endpoint's bare database work is timed too: the SQL statements it sends
(captured while the app answers in-process) replayed through psycopg on one connection,
without HTTP, routing, validation or the ORM. The ratio endpoint p50 / bare-query p50
at one client separates a slow machine from overhead in Brain.

    .venv/bin/python scripts/bench_history.py          # 10,000 jobs, 5M samples (~15 min)
    .venv/bin/python scripts/bench_history.py --jobs 2000 --samples 1000000 --requests 300
                                                       # reduced: the same table, < 5 min
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import psycopg
from proc_cpu import backends_cpu_seconds, backends_cpu_since, tree_cpu_seconds

from api.state import server_state

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from brain.config import Settings  # noqa: E402
from brain.db import migrate  # noqa: E402
from brain.db.engine import make_engine, make_session_factory  # noqa: E402
from brain.services.jobs import find_job  # noqa: E402
from brain.summaries import summarize_job  # noqa: E402
from brain.summaries.store import job_ids_of_uid, summarize_job_ids  # noqa: E402

GPU_TYPES = ("A100", "V100", "T4", None)
HISTORY_DAYS = 180
SPEED_COLUMNS = "job_id, ts, global_step, steps_per_sec, workers"
NODE_COLUMNS = (
    "node_id, ts, job_id, cpu, memory_mib, gpu_util, gpu_memory_mib, gpu_memory_total_mib"
)
JOB_COLUMNS = (
    "id, uid, name, user_name, dataset, group_key, framework, strategy, gpu_type, roles, "
    "status, exit_reason, created_at, updated_at, started_at, finished_at"
)
NODES_COLUMNS = "id, job_id, name, role, index, cpu, memory_mib, gpu, status, created_at"
PLAN_COLUMNS = "job_id, stage, status, body, created_at, updated_at"
PLAN_BODY = json.dumps({"optimizers": ["worker_tuning"]})
# p99 at 4 concurrent clients (docs/performance.md).
TARGETS_MS = {"suggestion": 20, "job portrait": 20, "user portrait": 20, "ranking": 40}
TARGET_CLIENTS = 4
TARGET_RATIO = 3.0
# The same server and clients answering without a database: what HTTP, the middleware,
# the thread hop and the client cost on this machine at each concurrency.
FLOOR = "floor: /healthz, no SQL"


def parse_args(argv: list[str] | None = None, description: str = __doc__) -> argparse.Namespace:
    """The options; ``description`` heads --help (a script reusing them passes its own)."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--host", default="127.0.0.1", help="PostgreSQL host (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5432, help="PostgreSQL port (default 5432)")
    p.add_argument("--user", default="postgres", help="PostgreSQL user (default postgres)")
    p.add_argument("--password", default=os.environ.get("PGPASSWORD"), help="default $PGPASSWORD")
    p.add_argument("--keep", action="store_true", help="keep the database afterwards")
    p.add_argument("--jobs", type=int, default=10_000, help="finished jobs (default 10,000)")
    p.add_argument("--samples", type=int, default=5_000_000, help="raw node samples (5M)")
    p.add_argument("--users", type=int, default=200, help="distinct users (default 200)")
    p.add_argument(
        "--clients",
        type=lambda v: [int(c) for c in v.split(",")],
        default=[1, 2, 4],
        help="concurrent HTTP clients, one run per value (default 1,2,4)",
    )
    p.add_argument("--requests", type=int, default=1000, help="requests per endpoint (1000)")
    p.add_argument(
        "--server-workers",
        type=int,
        default=None,
        help="serve with `brain serve --workers N` instead of `brain serve` with its default "
        "settings (the default: one worker per CPU core, at most 4)",
    )
    p.add_argument("--summarize-workers", type=int, default=2, help="backfill processes (2)")
    p.add_argument("--big-nodes", type=int, default=100, help="nodes of the large job (100)")
    p.add_argument("--big-hours", type=float, default=24, help="run time of the large job (24)")
    p.add_argument("--seed", type=int, default=7)
    return p.parse_args(argv)


# --- database ------------------------------------------------------------------------


def admin_connect(args) -> psycopg.Connection:
    return psycopg.connect(
        host=args.host,
        port=args.port,
        user=args.user,
        password=args.password,
        dbname="postgres",
        autocommit=True,
    )


def database_url(args, name: str) -> str:
    password = f":{args.password}" if args.password else ""
    return f"postgresql+psycopg://{args.user}{password}@{args.host}:{args.port}/{name}"


@contextmanager
def bench_database(args) -> Iterator[str]:
    name = f"brain_bench_{uuid.uuid4().hex[:10]}"
    with admin_connect(args) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    print(f"database {name} on {args.host}:{args.port}")
    try:
        url = database_url(args, name)
        migrate.upgrade(url)
        yield url
    finally:
        if args.keep:
            print(f"kept database {name}")
        else:
            with admin_connect(args) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            print(f"dropped database {name}")


def raw_connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"))


def loading_connect(url: str) -> psycopg.Connection:
    """A connection for the bulk load: foreign-key triggers off (the rows are consistent
    by construction), which checking two keys per sample row otherwise dominates."""
    conn = raw_connect(url)
    conn.execute("SET session_replication_role = replica")
    return conn


def copy_rows(conn: psycopg.Connection, table: str, columns: str, rows: list[tuple]) -> None:
    """COPY a few Python rows (psycopg adapts the values)."""
    with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


# A batch of samples: column name -> values (numpy), concatenated once per COPY.
Columns = dict[str, np.ndarray]


def copy_columns(conn: psycopg.Connection, table: str, columns: str, parts: list[Columns]) -> None:
    """COPY samples as text; one frame per batch, timestamps formatted by numpy (building
    a frame per node and formatting timestamps in pandas took most of the load time)."""
    frame = pd.DataFrame({name: np.concatenate([p[name] for p in parts]) for name in parts[0]})
    frame["ts"] = np.char.add(np.datetime_as_string(frame["ts"].to_numpy(), unit="ms"), "Z")
    copy_frame(conn, table, columns, frame)


def copy_frame(conn: psycopg.Connection, table: str, columns: str, frame: pd.DataFrame) -> None:
    """COPY a frame as text: fast for millions of samples."""
    buffer = io.StringIO()
    frame.to_csv(buffer, sep="\t", header=False, index=False, na_rep="\\N")
    with conn.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        copy.write(buffer.getvalue())


# --- history -------------------------------------------------------------------------


@dataclass
class Group:
    """Recurring runs: same user, name, dataset, GPU type and shape."""

    user: str
    name: str
    dataset: str
    gpu_type: str | None
    strategy: str
    roles: dict[str, dict]
    # Mean usage as a fraction of the request, per role (what wastes what).
    usage: dict[str, float]

    @property
    def key(self) -> str:
        return f"{self.user}/{self.name}"


def make_groups(rng: np.random.Generator, users: int) -> list[Group]:
    groups = []
    datasets = [f"ds-{i:03d}" for i in range(60)]
    for u in range(users):
        for n in range(int(rng.integers(1, 7))):
            gpu_type = GPU_TYPES[int(rng.integers(len(GPU_TYPES)))]
            gpus = 0 if gpu_type is None else int(rng.choice([1, 1, 2, 4, 8]))
            worker = {
                "count": int(rng.integers(2, 13)),
                "cpu": float(rng.choice([4, 8, 16])),
                "memory_mib": float(rng.choice([16384, 32768, 65536])),
                "gpu": gpus,
            }
            if rng.random() < 0.7:
                strategy = "ps"
                roles = {
                    "ps": {
                        "count": int(rng.integers(1, 5)),
                        "cpu": float(rng.choice([4, 8, 16])),
                        "memory_mib": float(rng.choice([8192, 16384, 32768])),
                        "gpu": 0,
                    },
                    "chief": {"count": 1, "cpu": 8.0, "memory_mib": 16384.0, "gpu": gpus},
                    "worker": worker,
                }
                if rng.random() < 0.3:
                    roles["evaluator"] = {"count": 1, "cpu": 4.0, "memory_mib": 8192.0, "gpu": 0}
            else:
                strategy = "allreduce"
                roles = {"worker": worker}
            groups.append(
                Group(
                    user=f"user-{u:03d}",
                    name=f"model-{n}",
                    dataset=str(rng.choice(datasets)),
                    gpu_type=gpu_type,
                    strategy=strategy,
                    roles=roles,
                    usage={role: float(rng.uniform(0.15, 0.9)) for role in roles},
                )
            )
    return groups


@dataclass
class Batch:
    """Rows waiting for COPY; node ids are assigned here so samples can name them."""

    jobs: list[tuple] = field(default_factory=list)
    nodes: list[tuple] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)
    plans: list[tuple] = field(default_factory=list)
    samples: list[Columns] = field(default_factory=list)
    speed: list[Columns] = field(default_factory=list)
    last_node_id: int = 0

    def flush(self, conn: psycopg.Connection) -> None:
        copy_rows(conn, "jobs", JOB_COLUMNS, self.jobs)
        copy_rows(conn, "nodes", NODES_COLUMNS, self.nodes)
        copy_rows(conn, "events", "job_id, node_id, node_name, ts, kind", self.events)
        copy_rows(conn, "scale_plans", PLAN_COLUMNS, self.plans)
        copy_columns(conn, "node_samples", NODE_COLUMNS, self.samples)
        copy_columns(conn, "speed_samples", SPEED_COLUMNS, self.speed)
        for rows in (self.jobs, self.nodes, self.events, self.plans, self.samples, self.speed):
            rows.clear()


def load_history(url: str, args, rng: np.random.Generator) -> tuple[list[Group], list[str]]:
    """Finished jobs of recurring groups with their nodes, samples, events and plans."""
    groups = make_groups(rng, args.users)
    # Some groups recur much more often than others.
    weights = rng.pareto(1.5, len(groups)) + 0.1
    picks = rng.choice(len(groups), size=args.jobs, p=weights / weights.sum())
    durations = rng.uniform(1, 8, args.jobs) * 3600
    ends_ago = rng.uniform(3600, HISTORY_DAYS * 86400, args.jobs)
    node_counts = np.array([sum(r["count"] for r in groups[g].roles.values()) for g in picks])
    # One sample interval for all, so that the node samples add up to --samples.
    interval = float((node_counts * durations).sum() / args.samples)
    print(
        f"  {len(groups)} groups, {node_counts.sum()} nodes, one sample per node every "
        f"{interval:.0f} s"
    )
    now = datetime.now(UTC)
    batch = Batch()
    uids = []
    with loading_connect(url) as conn:
        for i, g in enumerate(picks):
            end = now - timedelta(seconds=float(ends_ago[i]))
            start = end - timedelta(seconds=float(durations[i]))
            uids.append(add_job(batch, rng, i + 1, groups[g], start, end, interval))
            if len(batch.jobs) == 500 or i == len(picks) - 1:
                batch.flush(conn)
        for table in ("jobs", "nodes", "events", "scale_plans"):
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"coalesce((SELECT max(id) FROM {table}), 1))"
            )
    return groups, uids


def add_job(
    batch: Batch,
    rng: np.random.Generator,
    job_id: int,
    group: Group,
    start: datetime,
    end: datetime,
    interval: float,
) -> str:
    """One run of ``group``: its nodes sampled every ``interval`` seconds; 5% see an OOM,
    10% get a plan applied halfway. Returns its uid."""
    uid = f"job-{job_id:06d}"
    status = str(rng.choice(["succeeded", "failed", "stopped"], p=[0.85, 0.1, 0.05]))
    batch.jobs.append(
        (job_id, uid, group.name, group.user, group.dataset, group.key, "tensorflow",
         group.strategy, group.gpu_type, json.dumps(group.roles), status,
         "error" if status == "failed" else None, start - timedelta(minutes=5), end, start, end)
    )  # fmt: skip
    times = start + pd.to_timedelta(np.arange(0, (end - start).total_seconds() + 1, interval), "s")
    for role, spec in group.roles.items():
        for index in range(spec["count"]):
            batch.last_node_id += 1
            node_id = batch.last_node_id
            batch.nodes.append(
                (node_id, job_id, f"{role}-{index}", role, index, spec["cpu"],
                 spec["memory_mib"], spec["gpu"], "succeeded", start)
            )  # fmt: skip
            batch.samples.append(node_samples(rng, node_id, job_id, times, spec, group.usage[role]))
            if rng.random() < 0.05 / spec["count"] and role == "worker":
                batch.events.append((job_id, node_id, f"{role}-{index}", times[-1], "oom"))
    batch.speed.append(speed_samples(rng, job_id, times, group.roles["worker"]["count"]))
    if rng.random() < 0.1:
        halfway = times[len(times) // 2]
        batch.plans.append((job_id, "running", "applied", PLAN_BODY, halfway, halfway))
    return uid


def node_samples(rng, node_id: int, job_id: int, times, spec: dict, usage: float) -> Columns:
    n = len(times)
    cpu = np.clip(spec["cpu"] * usage * (1 + 0.25 * rng.standard_normal(n)), 0.01, None)
    # Memory grows over the run, as caches and queues fill.
    memory = (
        spec["memory_mib"] * usage * np.linspace(0.7, 1.1, n) * (1 + 0.05 * rng.standard_normal(n))
    )
    gpu = spec["gpu"] > 0
    unknown = np.full(n, np.nan)
    return {
        "node_id": np.full(n, node_id),
        "ts": times.to_numpy(dtype="datetime64[ns]"),
        "job_id": np.full(n, job_id),
        "cpu": cpu.round(3),
        "memory_mib": np.clip(memory, 1, None).round(1),
        "gpu_util": np.clip(usage + 0.1 * rng.standard_normal(n), 0, 1).round(3)
        if gpu
        else unknown,
        "gpu_memory_mib": (usage * 30000 + 500 * rng.standard_normal(n)).round(0)
        if gpu
        else unknown,
        "gpu_memory_total_mib": np.full(n, 40960.0) if gpu else unknown,
    }


def speed_samples(rng, job_id: int, times, workers: int) -> Columns:
    n = len(times)
    per_worker = rng.uniform(2, 20)
    sps = np.clip(per_worker * workers * (1 + 0.1 * rng.standard_normal(n)), 0.1, None)
    return {
        "job_id": np.full(n, job_id),
        "ts": times.to_numpy(dtype="datetime64[ns]"),
        "global_step": np.cumsum(sps).astype(np.int64),
        "steps_per_sec": sps.round(3),
        "workers": np.full(n, workers),
    }


def load_big_job(url: str, args, rng: np.random.Generator) -> str:
    """One finished job of --big-nodes nodes with --big-hours of 15-second samples."""
    uid = f"big-{args.big_nodes}x{args.big_hours:g}h"
    end = datetime.now(UTC) - timedelta(hours=1)
    start = end - timedelta(hours=args.big_hours)
    ps = max(args.big_nodes // 20, 1)
    roles = {
        "ps": {"count": ps, "cpu": 16.0, "memory_mib": 32768.0, "gpu": 0},
        "worker": {"count": args.big_nodes - ps, "cpu": 8.0, "memory_mib": 32768.0, "gpu": 1},
    }
    times = start + pd.to_timedelta(np.arange(0, args.big_hours * 3600 + 1, 15), unit="s")
    with loading_connect(url) as conn:
        job_id = conn.execute(
            "INSERT INTO jobs (uid, name, user_name, dataset, group_key, strategy, gpu_type, "
            "roles, status, created_at, updated_at, started_at, finished_at) VALUES "
            "(%s, 'big', 'user-big', 'ds-big', 'user-big/big', 'ps', 'A100', %s, "
            "'succeeded', %s, %s, %s, %s) RETURNING id",
            (uid, json.dumps(roles), start, end, start, end),
        ).fetchone()[0]
        samples = []
        for role, spec in roles.items():
            for index in range(spec["count"]):
                node_id = conn.execute(
                    "INSERT INTO nodes (job_id, name, role, index, cpu, memory_mib, gpu, status, "
                    "created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, 'succeeded', %s) RETURNING id",
                    (
                        job_id,
                        f"{role}-{index}",
                        role,
                        index,
                        spec["cpu"],
                        spec["memory_mib"],
                        spec["gpu"],
                        start,
                    ),
                ).fetchone()[0]
                samples.append(node_samples(rng, node_id, job_id, times, spec, 0.5))
        copy_columns(conn, "node_samples", NODE_COLUMNS, samples)
        copy_columns(
            conn,
            "speed_samples",
            SPEED_COLUMNS,
            [speed_samples(rng, job_id, times, roles["worker"]["count"])],
        )
    print(
        f"  {uid}: {args.big_nodes} nodes x {len(times)} samples = "
        f"{args.big_nodes * len(times):,} samples"
    )
    return uid


# --- summaries -----------------------------------------------------------------------


def _summarize_chunk(url: str, uids: list[str]) -> int:
    engine = make_engine(url, pool_size=1)
    try:
        factory = make_session_factory(engine)
        with factory() as session:
            job_ids = [i for uid in uids for i in job_ids_of_uid(session, uid)]
        return summarize_job_ids(factory, job_ids)
    finally:
        engine.dispose()


def backfill(url: str, uids: list[str], workers: int) -> float:
    started = time.perf_counter()
    chunks = [uids[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        done = sum(pool.map(_summarize_chunk, [url] * workers, chunks))
    elapsed = time.perf_counter() - started
    print(
        f"  summarized {done} jobs in {elapsed:.1f} s ({done / elapsed:.0f} jobs/s, "
        f"{workers} processes)"
    )
    return elapsed


def time_summarize(url: str, uid: str, runs: int = 3) -> list[float]:
    engine = make_engine(url)
    seconds = []
    try:
        factory = make_session_factory(engine)
        for _ in range(runs):
            with factory() as session:
                job = find_job(session, uid)
                started = time.perf_counter()
                summarize_job(session, job)
                session.commit()
                seconds.append(time.perf_counter() - started)
    finally:
        engine.dispose()
    return seconds


# --- HTTP load -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(port: int, workers: int | None) -> list[str]:
    """``brain serve`` as an operator starts it, or with ``workers`` processes."""
    command = [sys.executable, "-m", "api.main", "serve", "--port", str(port)]
    return command if workers is None else [*command, "--workers", str(workers)]


@dataclass(frozen=True)
class Server:
    base: str
    pid: int
    # The bench database, for its backends' CPU.
    dsn: str


@contextmanager
def api_server(url: str, workers: int | None) -> Iterator[Server]:
    port = free_port()
    env = os.environ | {"BRAIN_DATABASE_URL": url, "BRAIN_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(server_command(port, workers), cwd=ROOT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the API server did not start")
            time.sleep(0.2)
        yield Server(base, process.pid, url.replace("postgresql+psycopg://", "postgresql://"))
    finally:
        process.terminate()
        process.wait(timeout=30)


def measure(server: Server, paths: list[str], clients: int) -> dict[str, float]:
    """Latency of each request over ``clients`` threads, each with its own connection,
    and the CPU per request of the server's processes and of PostgreSQL's backends."""
    base = server.base
    latencies: list[float] = []
    errors = []
    workers: list[int] = []  # the worker process each client's connection reached
    lock = threading.Lock()
    position = iter(range(len(paths)))

    def client() -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            ready = http.get("/readyz").json()
            with lock:
                workers.append(ready["checks"]["leadership"]["detail"]["pid"])
            while True:
                with lock:
                    i = next(position, None)
                if i is None:
                    return
                started = time.perf_counter()
                response = http.get(paths[i])
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if response.status_code != 200:
                        errors.append((paths[i], response.status_code))

    server_cpu, backends_cpu = tree_cpu_seconds(server.pid), backends_cpu_seconds(server.dsn)
    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    server_cpu = tree_cpu_seconds(server.pid) - server_cpu
    backends_cpu = backends_cpu_since(server.dsn, backends_cpu)
    if errors:
        raise RuntimeError(f"{len(errors)} failed requests, e.g. {errors[0]}")
    ms = np.array(latencies) * 1000
    return {
        "p50": float(np.percentile(ms, 50)),
        "p99": float(np.percentile(ms, 99)),
        "max": float(ms.max()),
        "rps": len(ms) / wall,
        "server_cpu_ms": server_cpu * 1000 / len(ms),
        "pg_cpu_ms": backends_cpu * 1000 / len(ms),
        # Clients keep their connection, so each stays with one worker for the run: how
        # the kernel spread them (e.g. "3+1") decides how many queue in one process.
        "split": "+".join(str(n) for n in sorted(Counter(workers).values(), reverse=True)),
    }


def workloads(rng, groups: list[Group], uids: list[str], big_uid: str, n: int) -> dict:
    def pick(items):
        return items[int(rng.integers(len(items)))]

    def suggestion() -> str:
        g = pick(groups)
        dataset = f"&dataset={g.dataset}" if rng.random() < 0.5 else ""
        return f"/api/v1/suggestions?user={g.user}&name={g.name}{dataset}"

    users = sorted({g.user for g in groups})
    return {
        "suggestion": [suggestion() for _ in range(n)],
        "suggestion (text)": [suggestion() + "&format=text" for _ in range(n)],
        "job portrait": [f"/api/v1/portraits/jobs/{pick(uids)}" for _ in range(n)],
        "job portrait (large job)": [f"/api/v1/portraits/jobs/{big_uid}"] * max(n // 5, 20),
        "user portrait": [f"/api/v1/portraits/users/{pick(users)}?days=30" for _ in range(n)],
        "group portrait": [
            f"/api/v1/portraits/groups/{pick(groups).key}?days=90" for _ in range(n)
        ],
        "ranking": [
            f"/api/v1/portraits?by={pick(['user', 'dataset', 'group', 'gpu_type'])}&days=30"
            for _ in range(max(n // 5, 20))
        ],
        FLOOR: ["/healthz"] * n,
    }


# --- bare database work ------------------------------------------------------------

Statement = tuple[str, object]


@dataclass(frozen=True)
class CapturedRequest:
    statements: list[Statement]
    # GETs read without a transaction (no BEGIN and COMMIT); a suggestion keeps one.
    in_transaction: bool


def capture_statements(url: str, loads: dict[str, list[str]], n: int) -> dict[str, list]:
    """Per endpoint, the SQL statements each of its first ``n`` requests sends, and whether
    in a transaction, captured while the app answers in-process (the same code as the
    server, no HTTP)."""
    from fastapi.testclient import TestClient
    from sqlalchemy import event

    from api.app import create_app

    captured: list[Statement] = []
    autocommit: list[bool] = []

    def record(conn, _cursor, statement, parameters, _context, _executemany) -> None:
        captured.append((statement, parameters))
        autocommit.append(conn.connection.dbapi_connection.autocommit)

    result: dict[str, list[CapturedRequest]] = {}
    with TestClient(create_app(Settings(database_url=url))) as client:
        for paths in loads.values():  # first requests: schema check, token cache
            client.get(paths[0]).raise_for_status()
        event.listen(server_state(client.app).engine, "before_cursor_execute", record)
        for name, paths in loads.items():
            if name == FLOOR:
                continue
            result[name] = []
            for path in paths[:n]:
                captured.clear()
                autocommit.clear()
                client.get(path).raise_for_status()
                result[name].append(CapturedRequest(list(captured), not all(autocommit)))
    return result


def bare_p50(url: str, requests: list[CapturedRequest]) -> float:
    """Median ms of one request's statements replayed through psycopg as the server sends
    them (in one transaction, or each on its own), fetching every row (after a warm-up,
    as the server's connections are warm)."""

    def replay(conn: psycopg.Connection, request: CapturedRequest) -> None:
        conn.autocommit = not request.in_transaction
        with conn.cursor() as cursor:
            for statement, parameters in request.statements:
                cursor.execute(statement, parameters)
                if cursor.description is not None:
                    cursor.fetchall()
        if request.in_transaction:
            conn.commit()

    with raw_connect(url) as conn:
        for request in requests[:10]:
            replay(conn, request)
        ms = []
        for request in requests:
            started = time.perf_counter()
            replay(conn, request)
            ms.append((time.perf_counter() - started) * 1000)
    return statistics.median(ms)


# --- report --------------------------------------------------------------------------


def print_results(clients: int, results: dict[str, dict[str, float]]) -> None:
    print(f"\n{clients} concurrent clients")
    print(
        f"{'endpoint':<26}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'req/s':>8}"
        f"{'server CPU ms':>15}{'PG CPU ms':>11}  clients per worker"
    )
    for name, r in results.items():
        print(
            f"{name:<26}{r['p50']:9.1f}{r['p99']:9.1f}{r['max']:9.1f}{r['rps']:8.0f}"
            f"{r['server_cpu_ms']:15.2f}{r['pg_cpu_ms']:11.2f}  {r['split']}"
        )


def print_table(by_clients: dict[int, dict[str, dict[str, float]]], bare: dict[str, float]) -> None:
    """The README's table: p50 / p99 per concurrency, the bare-query p50 and the ratio."""
    levels = sorted(by_clients)
    first = levels[0]
    header = ["endpoint", *(f"{c} client{'s' if c > 1 else ''} p50 / p99" for c in levels)]
    header += [
        f"CPU per request at {first}: server + PostgreSQL",
        "bare query p50",
        f"ratio at {first}",
        f"target (p99 at {TARGET_CLIENTS})",
    ]
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in by_clients[first]:
        cells = [name]
        for c in levels:
            r = by_clients[c][name]
            split = f" ({r['split']})" if c > 1 else ""
            cells.append(f"{r['p50']:.1f} / {r['p99']:.1f} ms{split}")
        cpu = by_clients[first][name]
        cells.append(f"{cpu['server_cpu_ms']:.2f} + {cpu['pg_cpu_ms']:.2f} ms")
        if name == FLOOR:
            cells += ["", ""]
        else:
            ratio = by_clients[first][name]["p50"] / bare[name]
            cells += [
                f"{bare[name]:.2f} ms",
                f"{ratio:.1f}" + ("" if ratio <= TARGET_RATIO else " (>3)"),
            ]
        target = TARGETS_MS.get(name)
        verdict = ""
        if target is not None and TARGET_CLIENTS in by_clients:
            met = by_clients[TARGET_CLIENTS][name]["p99"] <= target
            verdict = f"≤ {target} ms: " + ("met" if met else "MISSED")
        cells.append(verdict)
        print("| " + " | ".join(cells) + " |")


# --- main ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    with bench_database(args) as url:
        print("loading history (COPY)")
        started = time.perf_counter()
        groups, uids = load_history(url, args, rng)
        big_uid = load_big_job(url, args, rng)
        with raw_connect(url) as conn:
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
            counts = {
                t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("jobs", "nodes", "node_samples", "speed_samples")
            }
            size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
            size = size.fetchone()[0]
        print(
            f"  loaded in {time.perf_counter() - started:.0f} s: "
            + ", ".join(f"{v:,} {k}" for k, v in counts.items())
            + f"; {size}"
        )

        print("summarizing")
        backfill(url, uids, args.summarize_workers)
        # The backfill just wrote ~100,000 summary rows: vacuum now, so autovacuum does
        # not compete with the timing below on 2 cores.
        with raw_connect(url) as conn:
            conn.autocommit = True
            conn.execute("VACUUM ANALYZE")
        seconds = time_summarize(url, big_uid)
        print(
            f"  {big_uid}: "
            + ", ".join(f"{s:.2f} s" for s in seconds)
            + f" (median {statistics.median(seconds):.2f} s, target < 1 s)"
        )

        loads = workloads(rng, groups, uids, big_uid, args.requests)
        print("bare database work: each endpoint's SQL replayed through psycopg")
        statements = capture_statements(url, loads, min(args.requests, 200))
        bare = {name: bare_p50(url, requests) for name, requests in statements.items()}

        workers = Settings(database_url=url).serve_workers
        server = f"brain serve (defaults: {workers} worker processes)"
        if args.server_workers is not None:
            server = f"brain serve --workers {args.server_workers}"
        print(f"serving: {server}, {args.requests} requests per endpoint and concurrency")
        by_clients = {}
        with api_server(url, args.server_workers) as server:
            for clients in args.clients:
                if clients != args.clients[0]:
                    loads = workloads(rng, groups, uids, big_uid, args.requests)
                # Warm up every endpoint first: connections, caches, the thread pool.
                for paths in loads.values():
                    measure(server, paths[: max(len(paths) // 10, 10)], clients)
                by_clients[clients] = {n: measure(server, p, clients) for n, p in loads.items()}
                print_results(clients, by_clients[clients])
        print_table(by_clients, bare)
        print(f"load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
