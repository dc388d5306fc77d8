"""``brain summarize``: backfill, one job, running jobs."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from brain.db.models import JobRow, JobSummaryRow
from tests.builders import flat_job, recent_hour
from tests.commands import run_command


def _run(monkeypatch, pg_url, *argv: str) -> int:
    monkeypatch.setenv("BRAIN_DATABASE_URL", pg_url)
    return run_command("summarize", list(argv))


def _summarized(session) -> dict[str, bool]:
    session.expire_all()
    return {
        uid: final
        for uid, final in session.execute(
            select(JobRow.uid, JobSummaryRow.final).join(
                JobSummaryRow, JobSummaryRow.job_id == JobRow.id
            )
        )
    }


@pytest.fixture
def jobs(session):
    start = recent_hour()
    for uid, status in (("done-1", "succeeded"), ("done-2", "failed"), ("live", "running")):
        flat_job(session, uid, start=start, cpu_request=2, cpu_used=1, status=status)
    session.commit()


def test_backfill_summarizes_finished_jobs_only(monkeypatch, pg_url, session, jobs, capsys):
    assert _run(monkeypatch, pg_url) == 0

    assert _summarized(session) == {"done-1": True, "done-2": True}
    assert "summarized 2 jobs" in capsys.readouterr().out
    # Nothing left to backfill; --all redoes both.
    assert _run(monkeypatch, pg_url) == 0
    assert "summarized 0 jobs" in capsys.readouterr().out
    assert _run(monkeypatch, pg_url, "--all") == 0
    assert "summarized 2 jobs" in capsys.readouterr().out


def test_running_and_single_job(monkeypatch, pg_url, session, jobs):
    assert _run(monkeypatch, pg_url, "--running") == 0
    assert _summarized(session) == {"live": False}

    assert _run(monkeypatch, pg_url, "--job", "done-2") == 0
    assert _summarized(session) == {"live": False, "done-2": True}


def test_unknown_job_fails(monkeypatch, pg_url, session, jobs):
    assert _run(monkeypatch, pg_url, "--job", "nope") == 1
