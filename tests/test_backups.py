"""The backups of docs/operations.md, run as written there: SQLite's online backup keeps
what is still in the write-ahead log (a copy of brain.db alone does not), a restore
serves the data again, and a PostgreSQL dump restores into an empty database."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from brain.db import migrate

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = (ROOT / "docs" / "operations.md").read_text()
SQLITE_BACKUP = (
    "python3 -c \"import sqlite3; sqlite3.connect('brain.db').backup("
    "sqlite3.connect('brain-backup.db'))\""
)
SQLITE_RESTORE = "rm -f brain.db-wal brain.db-shm\ncp brain-backup.db brain.db"
TOKEN_ROW = (
    "INSERT INTO api_tokens (name, secret_sha256, prefix, scope, created_at) "
    "VALUES ('kept', '{}', 'brain_abcdef', 'read', '2026-01-01 00:00:00+00:00')"
).format("c" * 64)


def _brain(*args: str, cwd: Path, url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BRAIN_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "api.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _names(database: Path) -> list[str]:
    with sqlite3.connect(database) as conn:
        return [row[0] for row in conn.execute("SELECT name FROM api_tokens")]


def test_the_documented_commands_are_the_ones_tested():
    assert SQLITE_BACKUP in OPERATIONS
    assert SQLITE_RESTORE in OPERATIONS


def test_sqlite_online_backup_keeps_what_is_still_in_the_write_ahead_log(tmp_path):
    migrate.upgrade(f"sqlite:///{tmp_path / 'brain.db'}")
    # A running server: its last commit still sits in brain.db-wal, not yet in brain.db.
    running = sqlite3.connect(tmp_path / "brain.db")
    try:
        running.execute("PRAGMA wal_autocheckpoint=0")
        running.execute(TOKEN_ROW)
        running.commit()
        assert (tmp_path / "brain.db-wal").stat().st_size > 0
        alone = tmp_path / "copied-alone"
        alone.mkdir()
        shutil.copy(tmp_path / "brain.db", alone / "brain.db")
        assert _names(alone / "brain.db") == []  # why the docs warn against it

        subprocess.run(SQLITE_BACKUP, shell=True, cwd=tmp_path, check=True, timeout=60)
    finally:
        running.close()
    assert _names(tmp_path / "brain-backup.db") == ["kept"]


def test_sqlite_restore_serves_the_backup(tmp_path):
    url = "sqlite:///./brain.db"
    migrate.upgrade(f"sqlite:///{tmp_path / 'brain.db'}")
    with sqlite3.connect(tmp_path / "brain.db") as conn:
        conn.execute(TOKEN_ROW)
    subprocess.run(SQLITE_BACKUP, shell=True, cwd=tmp_path, check=True, timeout=60)
    created = _brain("token", "create", "--name", "later", "--scope", "read", cwd=tmp_path, url=url)
    assert created.returncode == 0, created.stderr

    subprocess.run(SQLITE_RESTORE, shell=True, cwd=tmp_path, check=True, timeout=60)
    listed = _brain("token", "list", cwd=tmp_path, url=url)
    assert listed.returncode == 0, listed.stderr
    assert "kept" in listed.stdout and "later" not in listed.stdout


@pytest.mark.skipif(shutil.which("pg_dump") is None, reason="pg_dump is not installed")
def test_postgresql_dump_restores_into_an_empty_database(make_pg_database, tmp_path):
    source, target = make_pg_database(), make_pg_database()
    migrate.upgrade(source)
    created = _brain("token", "create", "--name", "kept", "--scope", "read", cwd=tmp_path,
                     url=source)  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert "pg_dump --format=custom --file=" in OPERATIONS and "pg_restore --no-owner" in OPERATIONS

    def libpq(url: str) -> str:  # the URL without "+psycopg", as the docs say
        return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

    dump = tmp_path / "brain.dump"
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", libpq(source)],
                   check=True, timeout=120)  # fmt: skip
    subprocess.run(["pg_restore", "--no-owner", f"--dbname={libpq(target)}", str(dump)],
                   check=True, timeout=120)  # fmt: skip

    current = _brain("db", "current", cwd=tmp_path, url=target)
    assert current.returncode == 0, current.stdout + current.stderr
    listed = _brain("token", "list", cwd=tmp_path, url=target)
    assert "kept" in listed.stdout, listed.stderr
