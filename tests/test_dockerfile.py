"""The image (no Docker engine runs here, so the Dockerfile is read, not built): two
stages, a non-root user matching the Kubernetes manifests, the `k8s` extra, a health
check that really tells a healthy server from a sick or absent one, and a command
Brain has."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import yaml

from api.main import build_parser

ROOT = Path(__file__).resolve().parent.parent


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, arguments = line.strip().partition(" ")
            found.append((instruction.upper(), arguments.strip()))
    return found


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for instruction, arguments in _instructions():
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, arguments))
    return stages


def _final(instruction: str) -> list[str]:
    return [arguments for name, arguments in _stages()[-1] if name == instruction]


def test_two_stages_the_final_copies_only_the_built_environment():
    build, final = _stages()
    assert re.fullmatch(r"python:3\.\d+-slim AS build", build[0][1])
    installs = [a for i, a in build if i == "RUN" and "pip install" in a]
    assert installs and all("--no-cache-dir" in a for a in installs)
    copies = _final("COPY")
    assert copies == ["--from=build /opt/brain /opt/brain"]
    assert not any("pip install" in a for a in _final("RUN"))


def test_the_image_installs_the_k8s_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    [install] = [a for i, a in _stages()[0] if i == "RUN" and "pip install" in a]
    [requested] = re.findall(r"'\.\[([a-z0-9,]+)\]'", install)
    assert "k8s" in requested.split(",")
    assert set(requested.split(",")) <= set(extras)
    assert any(dependency.startswith("kubernetes") for dependency in extras["k8s"])


def test_runs_as_the_non_root_user_of_the_kubernetes_manifests():
    [user] = _final("USER")
    uid, gid = (int(part) for part in user.split(":"))
    assert uid != 0 and gid != 0
    [useradd] = [a for a in _final("RUN") if "useradd" in a]
    assert f"--uid {uid}" in useradd and f"--gid {gid}" in useradd
    deployment = yaml.safe_load((ROOT / "deploy/kubernetes/base/deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"]) == (uid, gid)


def test_serves_a_real_command_on_the_exposed_port():
    [cmd] = _final("CMD")
    command = json.loads(cmd)
    assert command[:2] == ["brain", "serve"]
    assert hasattr(build_parser().parse_args(command[1:]), "handler")
    [expose] = _final("EXPOSE")
    assert expose.split() == ["8080", "50001"]
    [env] = _final("ENV")
    assert "BRAIN_PORT=8080" in env.split() and "BRAIN_HOST=0.0.0.0" in env.split()


class _Health(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):  # noqa: N802 - the http.server interface
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_args):
        pass


def _healthcheck_command() -> list[str]:
    [healthcheck] = _final("HEALTHCHECK")
    options, _, command = healthcheck.partition("CMD ")
    assert "--interval=" in options and "--timeout=" in options
    argv = json.loads(command)
    assert argv[0] == "python"
    return [sys.executable, *argv[1:]]


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_the_health_check_tells_a_healthy_server_from_a_sick_one(status, healthy):
    handler = type("Health", (_Health,), {"status": status})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        result = subprocess.run(
            _healthcheck_command(), env={"BRAIN_PORT": str(port)}, capture_output=True, timeout=30
        )
    finally:
        server.shutdown()
        server.server_close()
    assert (result.returncode == 0) is healthy


def test_the_health_check_fails_when_nothing_listens():
    with HTTPServer(("127.0.0.1", 0), _Health) as closed:
        port = closed.server_address[1]  # bound, then closed: nothing listens there
    result = subprocess.run(
        _healthcheck_command(), env={"BRAIN_PORT": str(port)}, capture_output=True, timeout=30
    )
    assert result.returncode != 0
