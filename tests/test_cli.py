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


def test_config_shows_each_price_in_effect_and_where_it_came_from(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": f"sqlite:///{tmp_path / 'p.db'}"}
    shown = json.loads(_run("config", env=env).stdout)["prices_in_effect"]
    assert shown["core_hour_usd"]["usd"] == 0.031611
    assert shown["core_hour_usd"]["from"].startswith("default (Google Cloud Compute Engine")
    assert shown["gpu_hour_usd_by_type"]["usd"]["t4"] == 0.35
    assert shown["gpu_hour_usd"] == {"usd": None, "from": "not priced (no default)"}
    mine = _run("config", env={**env, "BRAIN_PRICE_CORE_HOUR_USD": "0.05"}).stdout
    assert json.loads(mine)["prices_in_effect"]["core_hour_usd"] == {
        "usd": 0.05,
        "from": "BRAIN_PRICE_CORE_HOUR_USD",
    }
    off = _run("config", env={**env, "BRAIN_PRICE_DEFAULTS": "false"}).stdout
    assert json.loads(off)["prices_in_effect"]["gib_hour_usd"] == {
        "usd": None,
        "from": "not priced (BRAIN_PRICE_DEFAULTS=false)",
    }


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


def test_jobs_delete_removes_one_job_and_names_the_namespace_when_two_share_a_uid(tmp_path):
    from brain.db.engine import make_engine, make_session_factory
    from brain.domain import RoleSpec
    from brain.services.jobs import JobInput, upsert_job

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {"PATH": "/usr/bin:/bin", "BRAIN_DATABASE_URL": url}
    assert _run("db", "upgrade", env=env).returncode == 0
    engine = make_engine(url)
    with make_session_factory(engine)() as session:
        for namespace in ("ml", None):
            roles = {"worker": RoleSpec(count=2, cpu=4, memory_mib=8192)}
            upsert_job(
                session, "j-1", JobInput(name="n", user="u", namespace=namespace, roles=roles)
            )
        session.commit()

    ambiguous = _run("jobs", "delete", "j-1", env=env)
    assert ambiguous.returncode == 1
    assert "name one with --namespace" in ambiguous.stderr, ambiguous.stderr
    deleted = _run("jobs", "delete", "j-1", "--namespace", "ml", env=env)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.strip() == "deleted job 'j-1' of namespace ml"
    with engine.connect() as connection:
        left = connection.exec_driver_sql("SELECT uid, namespace FROM jobs").all()
    engine.dispose()
    assert left == [("j-1", None)]
    missing = _run("jobs", "delete", "j-1", "--namespace", "ml", env=env)
    assert missing.returncode == 1 and "no job" in missing.stderr.lower()


def test_serve_names_its_addresses():
    from api.cli import serve_addresses
    from brain.config import Settings

    local = serve_addresses(Settings(host="127.0.0.1", port=9000))
    assert "console   http://127.0.0.1:9000/ui/" in local
    assert "metrics   http://127.0.0.1:9000/metrics" in local and "gRPC" not in local
    everywhere = serve_addresses(Settings(host="0.0.0.0", port=8080, grpc_port=50001))
    assert "listening on every address" in everywhere
    assert "API       http://127.0.0.1:8080/api/v1/" in everywhere
    assert "gRPC      127.0.0.1:50001" in everywhere
    assert "console   http://[::1]:8080/ui/" in serve_addresses(Settings(host="::1", port=8080))


def test_the_default_database_is_the_users_wherever_a_command_runs(tmp_path):
    data, one, other = tmp_path / "data", tmp_path / "one", tmp_path / "other"
    one.mkdir(), other.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(data)}
    database = data / "brain" / "brain.db"

    shown = json.loads(_run("config", env=env).stdout)["database_url"]
    assert shown == f"sqlite:///{database}"
    without_xdg = {k: v for k, v in env.items() if k != "XDG_DATA_HOME"}
    home_default = json.loads(_run("config", env=without_xdg).stdout)["database_url"]
    assert (
        home_default == f"sqlite:///{tmp_path / 'home' / '.local' / 'share' / 'brain' / 'brain.db'}"
    )

    # Before any database: reading commands say so, how to make one, and create nothing.
    for args in (["report", "savings"], ["token", "list"], ["jobs", "delete", "x"]):
        result = subprocess.run(
            [*BRAIN, *args], capture_output=True, text=True, env=env, cwd=one, timeout=60
        )
        assert result.returncode == 2, (args, result.stderr)
        assert f"no database at {database}" in result.stderr
        assert "create it with `brain db upgrade`" in result.stderr
    assert not data.exists() and list(one.iterdir()) == []

    # Made from one directory, found from another.
    made = subprocess.run(
        [*BRAIN, "db", "upgrade"], capture_output=True, text=True, env=env, cwd=one, timeout=60
    )
    assert made.returncode == 0, made.stderr
    assert database.is_file() and list(one.iterdir()) == []
    report = subprocess.run(
        [*BRAIN, "report", "savings", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        cwd=other,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    assert list(other.iterdir()) == []
