"""The README's and the getting-started page's examples run as written against a fresh
Brain: ``brain serve`` on the embedded SQLite default, started here on 127.0.0.1.

Fenced ``sh`` blocks run in order in one bash session (``set -euo pipefail``; curl fails
on an HTTP error and shows its body). ``shell`` blocks (install, serve) are left to the
reader. The README's ``python`` blocks run after its shell blocks. The only change made
to the text is the port: the test's server listens on a free one, not 8080."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)
PRELUDE = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; echo; }\n'


def blocks(path: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(path.read_text()) if lang == language]


@pytest.fixture
def fresh_brain(tmp_path):
    """A fresh Brain as `scripts/serve.sh` starts it, in an empty directory, on the
    default database (the user's data directory, here under tmp_path)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    # The default database, in a data directory of this test's own: a fresh server.
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "brain"), "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
        yield port, tmp_path, env
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def run_shell(script: str, port: int, cwd: Path, env: dict) -> str:
    script = PRELUDE + script.replace("localhost:8080", f"127.0.0.1:{port}")
    script = script.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    done = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_readme_then_getting_started_run_against_one_fresh_server(fresh_brain):
    """As a new user goes: the README's examples, then the getting-started page's, on the
    same server; no example trips over a job another one registered."""
    port, cwd, env = fresh_brain
    # The server said where its console and docs are.
    started = (cwd / "serve.log").read_text()
    assert f"console   http://127.0.0.1:{port}/ui/" in started, started
    assert f"API docs  http://127.0.0.1:{port}/docs" in started
    # Its database is the default in the user's data directory, not one in the cwd.
    assert (cwd / "data" / "brain" / "brain.db").is_file()
    assert not (cwd / "brain.db").exists()
    for page in ("README.md", "docs/getting-started.md"):
        examples = blocks(ROOT / page, "sh")
        assert examples, f"{page} has no sh examples"
        run_shell("\n".join(examples), port, cwd, env)
        if page == "README.md":
            run_python(blocks(ROOT / page, "python"), port, cwd, env)


# ``print(...)  # 4.0: why``: the example states what it prints, and the test holds it to it.
STATED_OUTPUT = re.compile(r"^\s*print\(.*\)\s+# ([^:\s]+):", re.MULTILINE)


def run_python(examples: list[str], port: int, cwd: Path, env: dict) -> None:
    """Python examples import the client as `pip install ./client` lays it out: the
    package ``brain_client`` is the directory ``brain/client``. A ``print`` whose comment
    starts with a value (``# 4.0: why``) must print that value as a line."""
    site = cwd / "client-site"
    site.mkdir()
    (site / "brain_client").symlink_to(ROOT / "brain" / "client")
    env = {**env, "PYTHONPATH": str(site)}
    for example in examples:
        code = example.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        # each stated value is a line of the output, in the order the prints come
        lines = iter(line.strip() for line in done.stdout.splitlines())
        stated = STATED_OUTPUT.findall(code)
        assert all(value in lines for value in stated), (stated, done.stdout[-3000:])
