"""A real Prometheus for the collector tests.

One server per test session, on a free 127.0.0.1 port, over a temporary TSDB whose
history ``promtool tsdb create-blocks-from openmetrics`` wrote from the synthetic cluster
of ``cluster.py`` and, in the twelve hours before it (ending at least 15 minutes before
the cluster's history begins, so neither sees the other), the training fleet of
``fleet.py`` that discovery and backfill read. Tests that stop a server mid-run start
their own from a copy of the same blocks (``prometheus_factory``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import requests

from brain.config import CollectorSettings, Settings
from brain.domain import JobStatus, RoleSpec
from tests.builders import make_job
from tests.collectors.cluster import HISTORY_S, Cluster
from tests.collectors.fleet import Fleet, small_fleet
from tests.ports import free_port

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

PROMETHEUS_CONFIG = """global:
  scrape_interval: 15s
  evaluation_interval: 15s
"""


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.fail(
            f"`{tool}` is not on PATH: the collector tests need a real Prometheus "
            "(Debian/Ubuntu: apt-get install prometheus, which ships prometheus and promtool)",
            pytrace=False,
        )
    return path


class PromServer:
    """A Prometheus process over ``data_dir``; ``stop()`` and ``start()`` keep the port."""

    def __init__(self, data_dir: Path, workdir: Path, port: int | None = None) -> None:
        self.binary = _require("prometheus")
        self.data_dir = data_dir
        self.workdir = workdir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.config = workdir / "prometheus.yml"
        self.config.write_text(PROMETHEUS_CONFIG)
        self.log = workdir / "prometheus.log"

    def start(self) -> PromServer:
        assert self.proc is None
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.config}",
                    f"--storage.tsdb.path={self.data_dir}",
                    "--storage.tsdb.retention.time=7d",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
            )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.proc = None
                pytest.fail(f"Prometheus exited at start:\n{self._log_tail()}", pytrace=False)
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        pytest.fail(
            f"Prometheus not ready within {READY_TIMEOUT_S:.0f}s:\n{self._log_tail()}",
            pytrace=False,
        )
        raise AssertionError("unreachable")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return Cluster(int(time.time()) // 60 * 60 - 60)


@pytest.fixture(scope="session")
def fleet(cluster) -> Fleet:
    """The fleet, ending on the whole hour at least 15 minutes before the cluster begins."""
    end = (cluster.t0 - HISTORY_S - 15 * 60) // 3600 * 3600
    return small_fleet(end)


@pytest.fixture(scope="session")
def prometheus_blocks(cluster, fleet, tmp_path_factory) -> Path:
    """TSDB blocks holding the cluster's history (built once, copied per server)."""
    promtool = _require("promtool")
    _require("prometheus")
    root = tmp_path_factory.mktemp("prometheus-blocks")
    source = root / "cluster.om"
    history = cluster.openmetrics().removesuffix("# EOF\n")
    with open(source, "w") as out:
        out.write(history)
        for line in fleet.render():
            out.write(line + "\n")
        out.write("# EOF\n")
    blocks = root / "data"
    done = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(blocks)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        pytest.fail(f"promtool could not build the test blocks:\n{done.stderr}", pytrace=False)
    return blocks


@pytest.fixture(scope="session")
def prometheus_factory(prometheus_blocks, tmp_path_factory) -> Iterator:
    """Start a Prometheus over a fresh copy of the blocks; all are stopped at the end."""
    started: list[PromServer] = []

    def start() -> PromServer:
        workdir = tmp_path_factory.mktemp("prometheus")
        data = workdir / "data"
        shutil.copytree(prometheus_blocks, data)
        server = PromServer(data, workdir).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def prometheus(prometheus_factory) -> PromServer:
    """The session's Prometheus."""
    return prometheus_factory()


# --- Brain side -------------------------------------------------------------------------


@pytest.fixture
def collector_settings(db, prometheus) -> CollectorSettings:
    return CollectorSettings(
        prometheus_url=prometheus.url,
        collect_delay_s=0,
        collect_interval_s=0.5,
        prometheus_timeout_s=5,
        prometheus_retries=2,
        prometheus_backoff_s=0.05,
        discovery=False,  # these tests map the pods of registered jobs
    )


def app_settings(database_url: str, collector: CollectorSettings) -> Settings:
    """Brain's settings on ``database_url`` with this collector configuration."""
    return Settings(database_url=database_url, collector=collector)


def register_job(
    session_factory,
    name: str,
    namespace: str | None,
    started_at: datetime,
    *,
    uid: str | None = None,
    status: JobStatus = JobStatus.running,
) -> str:
    uid = uid or f"uid-{name}"
    with session_factory() as session:
        make_job(
            session,
            uid,
            name=name,
            dataset=None,
            namespace=namespace,
            status=status,
            start=started_at,
            created_at=started_at,
            hours=None,
            roles={"ps": RoleSpec(count=1, cpu=2), "worker": RoleSpec(count=2, cpu=4)},
        )
        session.commit()
    return uid
