"""`brain serve` with its DLRover gRPC service on a fresh PostgreSQL database, for the
gRPC benchmarks: the database made and dropped, the server started on loopback ports,
waited for, and stopped (Linux: idleness is read from /proc)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from proc_cpu import process_cpu_seconds

IDLE_CPU_SHARE = 0.05  # the server counts as idle below 5 % of a core
START_TIMEOUT_S = 60


@dataclass(frozen=True)
class Serving:
    process: subprocess.Popen
    http_port: int
    grpc_addr: str


@contextmanager
def fresh_database(pg: str) -> Iterator[str]:
    """A new database on the server ``pg`` (a postgresql:// URL without a database),
    dropped afterwards; yields its SQLAlchemy URL."""
    dbname = f"brain_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{pg}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{dbname}"')
    try:
        yield f"{pg.replace('postgresql://', 'postgresql+psycopg://')}/{dbname}"
    finally:
        with psycopg.connect(f"{pg}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


@contextmanager
def grpc_server(url: str, log_level: str = "warning") -> Iterator[Serving]:
    """`brain serve --migrate --workers 1` on ``url``, once its gRPC service answers.

    One worker process: what the benchmarks read from /metrics and /proc is per process.
    At exit the server is stopped and waited for: queued reports are written first."""
    http_port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "BRAIN_DATABASE_URL": url,
        "BRAIN_PORT": str(http_port),
        "BRAIN_GRPC_PORT": str(grpc_port),
        "BRAIN_LOG_LEVEL": log_level,
        "BRAIN_SUMMARY_INTERVAL_S": "0",
    }
    serve = ["serve", "--migrate", "--workers", "1"]
    process = subprocess.Popen([sys.executable, "-m", "api.main", *serve], env=env)
    try:
        addr = f"127.0.0.1:{grpc_port}"
        wait_serving(addr)
        yield Serving(process, http_port, addr)
    finally:
        process.terminate()
        process.wait(timeout=120)


def wait_serving(addr: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            with grpc.insecure_channel(addr) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                answer = stub.Check(health_pb2.HealthCheckRequest(service="brain.Brain"), timeout=1)
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError:
            time.sleep(0.2)
    raise SystemExit(f"brain serve did not start its gRPC service within {START_TIMEOUT_S} s")


def wait_idle(pid: int, timeout_s: float = 120) -> None:
    """Until the process uses under IDLE_CPU_SHARE of a core over half a second."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        before = process_cpu_seconds(pid)
        time.sleep(0.5)
        if process_cpu_seconds(pid) - before < IDLE_CPU_SHARE * 0.5:
            return


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
