"""DLRover gRPC latency: 50 job masters calling Brain at once.

In one run against PostgreSQL: `brain serve` with BRAIN_GRPC_PORT on a fresh database
(loopback only), then 50 concurrent clients (one channel each, like 50 masters), released
together, each making --calls calls of:
  1. persist_metrics with custom data that changes every call (every call writes);
  2. persist_metrics re-sending the same custom data (the rendezvous poll's pattern);
  3. optimize at job_stage_create (each client its own registered job).
Prints p50 / p99 / max per kind. Target: persist_metrics p99 under 50 ms.

    .venv/bin/python scripts/bench_grpc.py [--pg postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable

import grpc
import httpx
import psycopg
from dlrover.proto import brain_pb2, brain_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

CLIENTS = 50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432", help="server")
    parser.add_argument("--calls", type=int, default=40, help="calls per client and kind")
    args = parser.parse_args()
    dbname = f"brain_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    try:
        url = f"{args.pg.replace('postgresql://', 'postgresql+psycopg://')}/{dbname}"
        return run(url, args.calls)
    finally:
        with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


def run(url: str, calls: int) -> int:
    http_port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "BRAIN_DATABASE_URL": url,
        "BRAIN_PORT": str(http_port),
        "BRAIN_GRPC_PORT": str(grpc_port),
        "BRAIN_LOG_LEVEL": "warning",
        "BRAIN_SUMMARY_INTERVAL_S": "0",
    }
    server = subprocess.Popen([sys.executable, "-m", "brain.cli", "serve", "--migrate"], env=env)
    addr = f"127.0.0.1:{grpc_port}"
    try:
        _wait_serving(addr)
        uids = [f"bench-{i:02d}" for i in range(CLIENTS)]
        with httpx.Client(base_url=f"http://127.0.0.1:{http_port}") as rest:
            for uid in uids:
                rest.put(f"/api/v1/jobs/{uid}", json=_job(uid)).raise_for_status()
            load = os.getloadavg()[0]
            print(f"{CLIENTS} concurrent clients x {calls} calls each, brain serve on PostgreSQL")
            print(f"(machine load average at start: {load:.1f} on {os.cpu_count()} cores)")
            print(f"{'call':<42} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
            _report("persist_metrics, custom data changing", addr, uids, calls, _changing)
            _report("persist_metrics, custom data repeated", addr, uids, calls, _repeated)
            _report("optimize job_stage_create", addr, uids, max(calls // 4, 1), _create)
            print("server-side handler time, p99 (upper bucket bound of the histogram):")
            for method in ("persist_metrics", "optimize"):
                print(f"  {method:<40} <= {_server_p99(rest, method) * 1000:.1f} ms")
    finally:
        server.terminate()
        server.wait(timeout=120)  # queued reports are written before it exits
    return 0


def _job(uid: str) -> dict:
    return {
        "name": uid,
        "user": "bench",
        "strategy": "ps",
        "roles": {
            "ps": {"count": 2, "cpu": 8, "memory_mib": 12288},
            "worker": {"count": 4, "cpu": 4, "memory_mib": 8192},
        },
    }


def _metrics(uid: str, data: dict):
    message = brain_pb2.JobMetrics(customized_data=json.dumps(data))
    message.job_meta.uuid = uid
    return message


def _changing(stub, uid: str, i: int) -> None:
    stub.persist_metrics(_metrics(uid, {"rdzv_round": i, "init_training_time": 30}))


def _repeated(stub, uid: str, i: int) -> None:
    stub.persist_metrics(_metrics(uid, {"rdzv_round": 1, "init_training_time": 30}))


def _create(stub, uid: str, i: int) -> None:
    request = brain_pb2.OptimizeRequest(type="job_stage_create")
    request.jobs.add().uid = uid
    stub.optimize(request)


def _report(label: str, addr: str, uids: list[str], calls: int, call: Callable) -> None:
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(len(uids))

    def client(uid: str) -> None:
        with grpc.insecure_channel(addr) as channel:
            stub = brain_pb2_grpc.BrainStub(channel)
            call(stub, uid, -1)  # connect before the barrier
            start.wait()
            mine = []
            for i in range(calls):
                began = time.perf_counter()
                call(stub, uid, i)
                mine.append(time.perf_counter() - began)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(uid,)) for uid in uids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p99 = latencies[min(int(len(latencies) * 0.99), len(latencies) - 1)] * 1000
    print(f"{label:<42} {p50:8.1f} {p99:8.1f} {latencies[-1] * 1000:8.1f}")


def _server_p99(rest: httpx.Client, method: str) -> float:
    """The bound of the first latency bucket holding 99% of the method's calls."""
    prefix = 'brain_grpc_request_duration_seconds_bucket{le="'
    buckets = []
    for line in rest.get("/metrics").text.splitlines():
        if line.startswith(prefix) and f'method="{method}"' in line:
            bound = line.split('le="')[1].split('"')[0]
            buckets.append((float(bound), float(line.rsplit(" ", 1)[1])))
    total = max(count for _, count in buckets)
    return next(bound for bound, count in sorted(buckets) if count >= 0.99 * total)


def _wait_serving(addr: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with grpc.insecure_channel(addr) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                answer = stub.Check(health_pb2.HealthCheckRequest(service="brain.Brain"), timeout=1)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError:
            time.sleep(0.2)
    raise SystemExit("brain serve did not start its gRPC service within 60 s")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
