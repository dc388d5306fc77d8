"""`brain serve` with several worker processes: the shared socket answers without
Nagle's delay, the workers serve, one of them runs the background work, SIGTERM stops
them all; SQLite keeps one process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import pytest
from fastapi.testclient import TestClient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import func, select

from api import workers
from api.app import create_app
from api.main import main as brain_main
from api.state import server_state
from api.workers import listening_socket
from brain import config
from brain.config import Settings
from brain.db import migrate
from brain.db.engine import make_engine
from brain.db.models import JobRow, JobSummaryRow
from tests.builders import job_body, node_point
from tests.ports import free_port

START_S = 90  # two workers import the whole app on a busy two-core machine
STOP_S = 30


def test_connections_accepted_from_the_shared_socket_send_without_delay():
    """uvicorn's own multi-worker socket has proto 0, on whose connections asyncio never
    sets TCP_NODELAY: each answer then waited ~40 ms for the client's delayed ACK."""

    async def accepted_nodelay() -> int:
        sock = listening_socket("127.0.0.1", 0)
        options: list[int] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            served = writer.get_extra_info("socket")
            options.append(served.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            while not options:
                await asyncio.sleep(0.01)
            writer.close()
        return options[0]

    assert asyncio.run(asyncio.wait_for(accepted_nodelay(), 10)) != 0


def test_default_workers_follow_the_cpu_count_on_postgresql_only(monkeypatch):
    postgres = "postgresql+psycopg://postgres@127.0.0.1/brain"
    monkeypatch.delenv("BRAIN_WORKERS", raising=False)
    monkeypatch.setattr(config, "usable_cpus", lambda: 2)
    assert Settings(database_url=postgres).serve_workers == 2
    monkeypatch.setattr(config, "usable_cpus", lambda: 16)
    assert Settings(database_url=postgres).serve_workers == 4
    assert Settings(database_url=postgres, workers=8).serve_workers == 8
    assert Settings(database_url="sqlite:///brain.db").serve_workers == 1


def test_several_workers_on_sqlite_are_refused(tmp_path, monkeypatch, capsys):
    database = tmp_path / "brain.db"
    monkeypatch.setenv("BRAIN_DATABASE_URL", f"sqlite:///{database}")
    assert brain_main(["serve", "--workers", "2", "--port", str(free_port())]) == 1
    assert "SQLite takes one writer at a time" in capsys.readouterr().err
    assert not database.exists()  # refused before migrating


def test_two_workers_serve_one_runs_the_background_work_and_sigterm_stops_all(
    make_pg_database, tmp_path
):
    url = make_pg_database()
    migrate.upgrade(url)
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "BRAIN_DATABASE_URL": url,
        "BRAIN_SUMMARY_INTERVAL_S": "0.2",
        "BRAIN_GRPC_PORT": str(grpc_port),
        "BRAIN_MODEL_DIR": str(tmp_path / "models"),
        "BRAIN_LOG_LEVEL": "info",
    }
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "api.main", "serve", "--workers", "2", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    workers: list[int] = []
    children: list[int] = []
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_both_workers(server, workers, log_path)
        children = _children(server.pid)  # the workers, multiprocessing's resource tracker
        _wait_answering(base)
        # A running job: the refresher re-summarizes it every cycle, in the leader only.
        with httpx.Client(base_url=base, timeout=10) as client:
            put = client.put("/api/v1/jobs/j", json=job_body(status="running"))
            assert put.status_code == 201, put.text
            batch = {"nodes": [node_point("j-ps-0", "2026-03-01T00:00:00Z", 1, 1)]}
            assert client.post("/api/v1/jobs/j/samples", json=batch).status_code == 200
        engine = make_engine(url)
        try:
            assert _wait(lambda: _summaries(engine) == 1), "the refresher never ran"
        finally:
            engine.dispose()
        # Both workers serve gRPC on one port (SO_REUSEPORT), as one service.
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            answer = health.Check(health_pb2.HealthCheckRequest(service="brain.Brain"), timeout=10)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        leading = _leading_by_worker(base)
        assert sorted(leading) == sorted(workers)
        assert sum(leading.values()) == 1, leading
        time.sleep(0.5)  # a few more refresh cycles
        # Read before stopping: a worker stopping last may take the lock the leader gave
        # up and log an election of its own on the way out.
        text = log_path.read_text()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(STOP_S)
        except subprocess.TimeoutExpired:
            server.kill()
            for pid in children:
                _kill(pid)
            raise
    assert code == 0
    assert _wait(lambda: not any(map(_alive, children))), "a process outlived SIGTERM"

    # Elected once; every refresh cycle ran in the leader.
    [leader] = re.findall(r"\[(\d+)\]: process \d+ now runs the background work", text)
    assert [pid for pid, leads in leading.items() if leads] == [int(leader)]
    refreshing = set(re.findall(r"\[(\d+)\]: refreshed 1 job summaries", text))
    assert refreshing == {leader}, text[-3000:]


def _wait_for_both_workers(server: subprocess.Popen, workers: list[int], log: Path) -> None:
    """The workers' pids (spawned children of ``server``), once both started."""

    def both() -> bool:
        assert server.poll() is None, log.read_text()
        workers[:] = [pid for pid in _children(server.pid) if _spawned(pid)]
        return len(workers) == 2

    assert _wait(both, START_S), log.read_text()


def _wait_answering(base: str) -> None:
    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    assert _wait(ready, START_S), "brain serve never answered"


def _leading_by_worker(base: str, timeout_s: float = 60) -> dict[int, bool]:
    """Whether each worker leads, as /readyz reports it, asked over new connections
    until both workers answered. The kernel hands each connection to either, and may
    favour one idle worker for a long run: several at once make it use both."""

    def ask(_: int) -> tuple[int, bool]:
        detail = httpx.get(f"{base}/readyz", timeout=5).json()["checks"]["leadership"]["detail"]
        return detail["pid"], detail["leader"]

    leading: dict[int, bool] = {}
    deadline = time.monotonic() + timeout_s
    with ThreadPoolExecutor(max_workers=8) as pool:
        while len(leading) < 2 and time.monotonic() < deadline:
            leading.update(pool.map(ask, range(16)))
    return leading


def _summaries(engine) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(JobSummaryRow).join(JobRow)
        return conn.scalar(query.where(JobRow.uid == "j"))


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _spawned(pid: int) -> bool:
    return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _wait(condition, timeout_s: float = 15) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.mark.parametrize(("workers", "pool_size"), [(1, 40), (2, 20), (3, 13), (4, 10), (8, 10)])
def test_worker_processes_share_the_machines_connections(pg_url, workers, pool_size):
    # 40 connections per machine among the workers, at least 10 each: 4 workers keep
    # 40 (+ 40 overflow) of PostgreSQL's default 100, where each keeping 40 made 200.
    settings = Settings(database_url=pg_url, workers=workers)
    assert settings.pool_size == pool_size
    with TestClient(create_app(settings)) as client:
        assert server_state(client.app).engine.pool.size() == pool_size


def test_a_worker_that_fails_to_start_makes_serve_exit_non_zero(make_pg_database, tmp_path):
    """Each worker binds the gRPC port; one already taken (without SO_REUSEPORT) fails
    the workers' start. uvicorn then stops the others, and `brain serve` must not report
    success to whoever runs it (a container's restart policy, a service manager).

    A short health check: a ping that reaches a worker while it exits is never answered,
    and uvicorn notices the failure only when that ping times out."""
    url = make_pg_database()
    migrate.upgrade(url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = {
            **os.environ,
            "BRAIN_DATABASE_URL": url,
            "BRAIN_GRPC_PORT": str(taken.getsockname()[1]),
            "BRAIN_SUMMARY_INTERVAL_S": "0",
            "BRAIN_MODEL_DIR": str(tmp_path / "models"),
            "BRAIN_WORKER_HEALTHCHECK_S": "5",
        }
        result = subprocess.run(
            [sys.executable, "-m", "api.main", "serve", "--workers", "2"]
            + ["--port", str(free_port())],
            env=env,
            capture_output=True,
            text=True,
            timeout=START_S + STOP_S,
        )
    assert result.returncode == 3, result.stderr[-2000:]
    assert "failed to start" in result.stderr


def test_the_workers_health_check_timeout_is_the_setting(monkeypatch):
    """uvicorn's supervisor gets BRAIN_WORKER_HEALTHCHECK_S, not its own 5 s."""
    seen: list[float] = []

    class Supervisor:
        def __init__(self, config, sockets):
            seen.append(config.timeout_worker_healthcheck)
            self.processes = []

        def run(self):
            pass

    changed = ("BRAIN_HOST", "BRAIN_PORT", "BRAIN_WORKERS", "BRAIN_WORKER_HEALTHCHECK_S")
    for name in (*changed, workers.SERVE_PID_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(workers, "Multiprocess", Supervisor)
    settings = Settings(host="127.0.0.1", port=free_port(), worker_healthcheck_s=7.5)
    assert workers.run_workers(settings, 2) == 0
    assert seen == [7.5]
    assert Settings().worker_healthcheck_s == 30


def _gone(pid: int) -> bool:
    """Exited (a zombie waiting for its new parent to reap it counts as exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_workers_exit_when_the_serve_process_is_killed(make_pg_database, tmp_path):
    """SIGKILL of `brain serve` leaves no worker serving or holding the port."""
    url = make_pg_database()
    migrate.upgrade(url)
    port = free_port()
    env = {**os.environ, "BRAIN_DATABASE_URL": url, "BRAIN_SUMMARY_INTERVAL_S": "0"}
    env["BRAIN_MODEL_DIR"] = str(tmp_path / "models")
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "api.main", "serve", "--workers", "2", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    workers: list[int] = []
    try:
        _wait_for_both_workers(server, workers, log_path)
        _wait_answering(f"http://127.0.0.1:{port}")
    finally:
        server.kill()
        server.wait(STOP_S)
    try:
        assert _wait(lambda: all(map(_gone, workers)), STOP_S), log_path.read_text()[-3000:]
    finally:
        for pid in workers:
            _kill(pid)
    # The port is free again: a new server could bind it.
    listening_socket("127.0.0.1", port).close()
