"""The default worker count follows the container's CPU quota (cgroup v2 ``cpu.max``,
v1 CFS quota), read from control-group files laid out as Linux shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import config
from brain.config import Settings, cpu_quota_cores

POSTGRES = "postgresql+psycopg://postgres@127.0.0.1/brain"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _v2(tmp_path: Path, cpu_max: str | None, own: str = "/") -> tuple[Path, Path]:
    root, proc = tmp_path / "cgroup", tmp_path / "proc-self-cgroup"
    root.mkdir()
    _write(proc, f"0::{own}\n")
    if cpu_max is not None:
        _write(root / own.strip("/") / "cpu.max", cpu_max)
    return root, proc


@pytest.mark.parametrize(
    ("cpu_max", "cores"),
    [("200000 100000\n", 2.0), ("150000 100000", 1.5), ("50000 100000", 0.5), ("max 100000", None)],
)
def test_cgroup_v2_cpu_max_in_a_container(tmp_path, cpu_max, cores):
    assert cpu_quota_cores(*_v2(tmp_path, cpu_max)) == cores


def test_cgroup_v2_takes_the_tightest_quota_of_the_group_and_its_ancestors(tmp_path):
    root, proc = _v2(tmp_path, "300000 100000", own="/kubepods/pod1/ctr")
    _write(root / "kubepods" / "pod1" / "cpu.max", "250000 100000")  # the pod's limit
    _write(root / "kubepods" / "cpu.max", "max 100000")
    assert cpu_quota_cores(root, proc) == 2.5


def test_cgroup_v1_cfs_quota(tmp_path):
    root, proc = tmp_path / "cgroup", tmp_path / "proc-self-cgroup"
    _write(proc, "4:memory:/\n3:cpu,cpuacct:/\n0::/\n")
    _write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "350000\n")
    _write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    assert cpu_quota_cores(root, proc) == 3.5
    _write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n")  # no quota
    assert cpu_quota_cores(root, proc) is None


def test_no_cgroup_files_means_no_quota(tmp_path):
    assert cpu_quota_cores(tmp_path / "none", tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("cpu_max", "affinity", "workers"),
    [
        ("150000 100000", 8, 1),  # 1.5 cores: one whole core's worth of workers
        ("300000 100000", 8, 3),
        ("300000 100000", 2, 2),  # the cpuset is tighter than the quota
        ("1600000 100000", 16, 4),  # at most MAX_DEFAULT_WORKERS
        ("50000 100000", 8, 1),  # at least one
        ("max 100000", 3, 3),
    ],
)
def test_default_workers_follow_the_quota(tmp_path, monkeypatch, cpu_max, affinity, workers):
    root, proc = _v2(tmp_path, cpu_max)
    monkeypatch.setattr(config, "CGROUP_ROOT", root)
    monkeypatch.setattr(config, "PROC_SELF_CGROUP", proc)
    monkeypatch.setattr(config.os, "sched_getaffinity", lambda _pid: set(range(affinity)))
    monkeypatch.delenv("BRAIN_WORKERS", raising=False)
    assert Settings(database_url=POSTGRES).serve_workers == workers
