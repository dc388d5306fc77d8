"""CPU time of benchmark peers read from /proc (Linux): the server's process tree and
the PostgreSQL backends of one database. Unlike latencies and rates, CPU per request
barely moves with what else the machine runs, so the benchmarks print both."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (all its threads); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU of a process and its children (`brain serve`'s workers)."""
    children = [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
    return process_cpu_seconds(pid) + sum(tree_cpu_seconds(child) for child in children)


def backends_cpu_seconds(dsn: str) -> dict[int, float]:
    """CPU of each PostgreSQL backend connected to the database of ``dsn`` (the
    server's pooled connections), but not the one asking."""
    with psycopg.connect(dsn) as conn:
        pids = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid: process_cpu_seconds(pid) for (pid,) in pids}


def backends_cpu_since(dsn: str, before: dict[int, float]) -> float:
    """CPU the backends spent since ``before`` (a backend opened meanwhile counts whole)."""
    return sum(now - before.get(pid, 0.0) for pid, now in backends_cpu_seconds(dsn).items())
