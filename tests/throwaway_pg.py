"""A throwaway PostgreSQL server for machines where none listens on 127.0.0.1:5432.

initdb refuses to run as root, so as root the server runs as the ``postgres`` system
user. It listens on 127.0.0.1 only, with trust auth, in a temporary directory.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from tests.ports import free_port


def _bin(tool: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"), reverse=True)
    found = candidates[0] if candidates else shutil.which(tool)
    if not found:
        raise RuntimeError(f"{tool} not found: install the Debian package postgresql")
    return found


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def throwaway_postgres(base: Path):
    """Start a server, yield its connection parameters, stop it and remove its files."""
    data, sockets = base / "data", base / "sock"
    base.mkdir(parents=True, exist_ok=True)
    sockets.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(sockets, "postgres")
    port = free_port()
    subprocess.run(
        _as_server_user([_bin("initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"]),
        check=True,
        capture_output=True,
    )
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    subprocess.run(
        _as_server_user(
            [_bin("pg_ctl"), "-D", str(data), "-o", options, "-l", str(base / "log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
        timeout=60,
    )
    try:
        _wait_for(port)
        yield {"host": "127.0.0.1", "port": port, "user": "postgres"}
    finally:
        subprocess.run(
            _as_server_user([_bin("pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(base, ignore_errors=True)


def _wait_for(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"throwaway PostgreSQL did not listen on port {port}")
