"""`brain serve` runs without the offline tools: pandas and matplotlib are the
``backtest`` extra, loaded only by `brain backtest`.

Checked in a fresh interpreter, as `brain serve` builds it: the CLI parser (every
subcommand registered), the app with its parts and its lifespan, and requests
that reach the optimizers, summaries, portraits and suggestions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OFFLINE_ONLY = ("pandas", "matplotlib")

SERVE_PATH = """
import json, sys
from api.main import build_parser
from api.server import serve_app
build_parser()
from fastapi.testclient import TestClient
from brain.config import Settings

app = serve_app(Settings())
job = {
    "name": "ctr", "user": "alice", "strategy": "ps",
    "roles": {"ps": {"count": 1, "cpu": 4, "memory_mib": 8192},
              "worker": {"count": 2, "cpu": 4, "memory_mib": 8192}},
}
point = {"name": "w-0", "role": "worker", "index": 0, "ts": "2026-01-01T00:00:00Z",
         "cpu": 2.0, "memory_mib": 4096}
statuses = []
with TestClient(app) as client:
    calls = [
        ("put", "/api/v1/jobs/j1", {"json": {**job, "status": "running"}}),
        ("post", "/api/v1/jobs/j1/samples", {"json": {"nodes": [point]}}),
        ("post", "/api/v1/jobs/j1/optimize", {"json": {"stage": "running"}}),
        ("post", "/api/v1/jobs/j1/optimize", {"json": {"stage": "create"}}),
        ("patch", "/api/v1/jobs/j1", {"json": {"status": "succeeded"}}),
        ("get", "/api/v1/portraits/jobs/j1", {}),
        ("get", "/api/v1/portraits", {}),
        ("get", "/api/v1/suggestions?user=alice&name=ctr", {}),
        ("get", "/metrics", {}),
    ]
    for method, url, kwargs in calls:
        statuses.append(getattr(client, method)(url, **kwargs).status_code)
print(json.dumps({"statuses": statuses, "modules": sorted(sys.modules)}))
"""


def test_brain_serve_loads_neither_pandas_nor_matplotlib(sqlite_url, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": sqlite_url, "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", SERVE_PATH],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["statuses"] == [201, 200, 200, 200, 200, 200, 200, 200, 200]
    assert "brain.optimizing" in out["modules"]  # the check sees what was loaded
    assert "brain.portraits.jobs" in out["modules"]
    loaded = [m for m in out["modules"] if m.split(".")[0] in OFFLINE_ONLY]
    assert loaded == []


def test_backtest_without_the_extra_names_it(tmp_path):
    """pandas made unimportable (as in an install without the extra): the command
    says what to install instead of failing with a traceback."""
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "from brain.cli import main\n"
        f"sys.exit(main(['backtest', '--trace', '{tmp_path / 'runs.csv'}']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "brain backtest needs pandas: pip install 'brain[backtest]'" in result.stderr
