"""The client installs and runs without the server: ``client/`` packages ``brain/client``
as ``brain_client``, which must import nothing but httpx, pydantic and itself."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Loaded as the distribution installs it (top-level ``brain_client``), with the server's
# packages and heavy dependencies refused, then driven over a mock transport.
SCRIPT = r"""
import importlib.util, json, sys
from datetime import UTC, datetime

REFUSED = {"brain", "api", "collectors", "optimizers", "fastapi", "starlette",
           "sqlalchemy", "psycopg", "sklearn", "numpy", "pandas", "grpc", "dlrover"}

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ImportError(f"the client imported {name}")
        return None

sys.meta_path.insert(0, Refuse())
spec = importlib.util.spec_from_file_location(
    "brain_client", sys.argv[1] + "/__init__.py", submodule_search_locations=[sys.argv[1]])
brain_client = importlib.util.module_from_spec(spec)
sys.modules["brain_client"] = brain_client
spec.loader.exec_module(brain_client)

import httpx
sent = []

def answer(request):
    sent.append((request.method, request.url.path, json.loads(request.content or b"null")))
    if request.url.path.endswith("/samples"):
        return httpx.Response(200, json={"accepted": 1, "duplicates": 0})
    if request.url.path.endswith("/jobs/x"):
        return httpx.Response(422, json={"error": {"code": "invalid", "message": "bad",
                                                   "field": "namespace"}})
    return httpx.Response(201, json={})

http = httpx.Client(base_url="http://brain", transport=httpx.MockTransport(answer))
brain = brain_client.BrainClient(http=http, token="brain_secret")
ts = datetime(2026, 1, 1, tzinfo=UTC)
brain.register_job("j", brain_client.JobRegistration(name="n", user="u", namespace="ml",
                                                     gpu_type="A100", framework="tf"))
brain.push_samples("j", nodes=[brain_client.NodeUsage(name="w", role="worker", ts=ts, cpu=1,
                                                      memory_mib=2, gpu_memory_mib=3)])
try:
    brain.register_job("x", brain_client.JobRegistration(name="n", user="u"))
except brain_client.BrainError as error:
    sent.append(["error", error.status, error.code, error.field])
assert http.headers["authorization"] == "Bearer brain_secret"
print(json.dumps(sent))
"""


def test_the_client_runs_without_the_servers_packages():
    done = subprocess.run(
        [sys.executable, "-I", "-c", SCRIPT, str(ROOT / "brain" / "client")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    sent = json.loads(done.stdout)
    assert sent[0][:2] == ["PUT", "/api/v1/jobs/j"]
    assert {k: sent[0][2][k] for k in ("namespace", "gpu_type", "framework", "status")} == {
        "namespace": "ml",
        "gpu_type": "A100",
        "framework": "tf",
        "status": "running",
    }
    assert sent[1][:2] == ["POST", "/api/v1/jobs/j/samples"]
    assert sent[1][2]["nodes"][0]["gpu_memory_mib"] == 3
    assert sent[-1] == ["error", 422, "invalid", "namespace"]


def test_the_client_distribution_needs_only_httpx_and_pydantic():
    project = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())
    names = {dep.split(">")[0].split("=")[0].strip() for dep in project["project"]["dependencies"]}
    assert names == {"httpx", "pydantic"}
    assert project["tool"]["setuptools"]["package-dir"] == {"brain_client": "../brain/client"}
