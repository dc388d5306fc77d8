"""``brain backtest --from-db``: the database's summarized jobs backtested end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest

from tests.builders.db_runs import T0, database_url, ps_job
from tests.commands import run_command


def test_job_filters_need_from_db(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("workload,day,samples,req_memory_mib,mem_max\nw,2024-01-01,3,10,5\n")
    assert run_command("backtest", ["--trace", str(trace), "--user", "alice"]) == 2
    assert "--user need --from-db" in capsys.readouterr().err


def test_cli_backtests_the_database_as_json(db):
    for day in range(5):
        ps_job(db, f"ctr-{day}", start=T0 + timedelta(days=day))
    env = {**os.environ, "BRAIN_DATABASE_URL": database_url(db)}
    result = subprocess.run(
        [sys.executable, "-m", "api.main", "backtest", "--from-db", "--json", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["runs"] == 5 and report["workloads"] == 1
    assert report["source"].startswith("database postgresql+psycopg://")
    request = next(
        e for e in report["recommenders"] if (e["name"], e["resource"]) == ("request", "memory")
    )
    # 3 earlier runs needed: runs 4 and 5 are warm; workers peak at 500 of 16384 MiB
    assert request["runs"] == 2 and request["under_rate"] == 0.0
    assert request["alloc_used"] == pytest.approx(16384 / 500)


def test_an_empty_selection_exits_with_2(db, monkeypatch, capsys):
    ps_job(db, "ctr-1")
    monkeypatch.setenv("BRAIN_DATABASE_URL", database_url(db))
    assert run_command("backtest", ["--from-db", "--group", "none/such"]) == 2
    assert "no summarized finished job" in capsys.readouterr().err
    assert run_command("backtest", ["--from-db", "--group", "alice/ctr", "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 1
