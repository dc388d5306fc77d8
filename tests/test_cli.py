"""The ``brain`` command line, run as a user would run it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import brain

BRAIN = [sys.executable, "-m", "api.main"]


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*BRAIN, *args], capture_output=True, text=True, env=env, timeout=60)


def test_version_and_help():
    assert _run("--version").stdout.strip() == f"brain {brain.__version__}"
    help_text = _run("--help").stdout
    for command in ("serve", "db", "config", "retention"):
        assert command in help_text
    assert "apply pending migrations" in _run("db", "--help").stdout
    assert "--migrate" in _run("serve", "--help").stdout


def test_config_masks_secrets(monkeypatch):
    env = {
        "PATH": "/usr/bin:/bin",
        "BRAIN_DATABASE_URL": "postgresql+psycopg://brain:s3cret@db:5432/brain",
        "BRAIN_PROMETHEUS_TOKEN": "tok-123",
        "BRAIN_PORT": "9000",
    }
    result = _run("config", env=env)
    assert result.returncode == 0, result.stderr
    config = json.loads(result.stdout)
    assert config["database_url"] == "postgresql+psycopg://brain:***@db:5432/brain"
    assert config["prometheus_token"] == "***"
    assert config["port"] == 9000
    assert "s3cret" not in result.stdout and "tok-123" not in result.stdout
    # unset, the stages run the installed optimizers' declared defaults, and it says which
    assert config["stage_optimizers"]["create"] == ["startup", "gpu_cpu", "learned_margin"]
    configured = _run("config", env={**env, "BRAIN_STAGE_OPTIMIZERS": '{"oom": []}'})
    assert json.loads(configured.stdout)["stage_optimizers"] == {"oom": []}


def test_db_upgrade_then_current_on_sqlite(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    before = _run("db", "current", env=env)
    assert before.returncode == 1
    assert "current: none" in before.stdout
    assert _run("db", "upgrade", env=env).returncode == 0
    after = _run("db", "current", env=env)
    assert after.returncode == 0
    assert after.stdout.splitlines()[0].split()[-1] == after.stdout.splitlines()[1].split()[-1]


def test_a_reader_that_went_away_ends_the_command_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `brain config | head` once head has exited
    try:
        result = subprocess.run(
            [*BRAIN, "config"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (1, "")


def test_commands_outside_the_database_directory_say_so_and_create_nothing(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": "sqlite:///./brain.db"}
    for args in (["token", "list"], ["token", "create", "--name", "a", "--scope", "read"],
                 ["retention", "--days", "3"], ["summarize"], ["train", "--from-db"]):  # fmt: skip
        result = subprocess.run(
            [*BRAIN, *args], capture_output=True, text=True, env=env, cwd=elsewhere, timeout=60
        )
        assert result.returncode == 2, (args, result.stderr)
        assert f"no database at {elsewhere / 'brain.db'}" in result.stderr, result.stderr
        assert "relative to the current directory" in result.stderr
        assert "Traceback" not in result.stderr
    current = subprocess.run(
        [*BRAIN, "db", "current"], capture_output=True, text=True, env=env, cwd=elsewhere
    )
    assert current.returncode == 1 and "current: none" in current.stdout
    assert "no database at" in current.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_database_never_migrated_is_named_as_such(tmp_path):
    database = tmp_path / "other.db"
    sqlite3.connect(database).close()  # a file, but no Brain schema in it
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": f"sqlite:///{database}"}
    result = _run("token", "list", env=env)
    assert result.returncode == 2
    assert "none (never migrated)" in result.stderr and "brain db upgrade" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_plugin_command_with_a_taken_name_is_skipped_quietly(monkeypatch, capsys):
    # As in an install whose metadata still lists Brain's own serve under brain.commands.
    from brain import cli

    called = []
    monkeypatch.setattr(cli, "load_callables", lambda group: {"config": called.append})
    parser = cli.build_parser()
    assert called == []
    assert parser.parse_args(["config"]).handler is cli._config
    assert capsys.readouterr().err == ""
