"""A run's hours per UTC day (``job_usage_days``), written with its summary, and the
windows and ISO weeks summed from them.

The hand-worked run ``night``: one node asking 3 cores and 1 GiB, using 1 core and 0.5
GiB, from Sunday 2026-11-22 20:00 to Monday 2026-11-23 04:00 UTC (8 hours, across
midnight and the ISO week's boundary): 24 core-hours asked and 8 used, 8 GiB-hours asked
and 4 used. Sunday holds 20:00–24:00, half of it: 12 core-hours asked, 4 used, 4
GiB-hours asked, 2 used; Monday the other half, and the job itself (it ended on Monday,
so it counts in Monday's week, 2026-11-23).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select

from brain.db.engine import make_engine, make_session_factory
from brain.db.models import JobUsageDayRow
from brain.portraits.jobs import owner_portrait, owner_totals, ranking, totals_by
from brain.portraits.priorities import priorities
from brain.portraits.trend import TrendScope, weekly_trend, window_sum
from brain.services.job_deletion import delete_job
from brain.summaries import summarize_job
from tests.builders import add_event, add_points, flat_job

approx = pytest.approx
SUNDAY = datetime(2026, 11, 22, tzinfo=UTC)
MONDAY = SUNDAY + timedelta(days=1)
WEEK_BEFORE = MONDAY - timedelta(days=7)
NEXT_MONDAY = MONDAY + timedelta(days=7)


def night(session):
    job = flat_job(
        session,
        "night",
        start=SUNDAY + timedelta(hours=20),
        cpu_request=3,
        cpu_used=1,
        hours=8,
        namespace="ml",
    )
    summarize_job(session, job)
    session.commit()
    return job


def day_rows(session) -> list[JobUsageDayRow]:
    return list(session.scalars(select(JobUsageDayRow).order_by(JobUsageDayRow.day)))


ML = TrendScope("ml")


def window(session, since, end, scope=ML):
    weeks = weekly_trend(session, since, end, scope, None)
    return weeks, window_sum(weeks)[0]


def check_split(session) -> None:
    sunday, monday = day_rows(session)
    assert (sunday.day, sunday.from_at, sunday.to_at) == (
        SUNDAY,
        SUNDAY + timedelta(hours=20),
        MONDAY,
    )
    assert (monday.day, monday.from_at, monday.to_at) == (
        MONDAY,
        MONDAY,
        MONDAY + timedelta(hours=4),
    )
    for row in (sunday, monday):
        assert row.run_seconds == 4 * 3600
        assert (row.requested_core_hours, row.used_core_hours) == (approx(12), approx(4))
        assert (row.requested_gib_hours, row.used_gib_hours) == (approx(4), approx(2))
        assert (row.ended_at, row.end_week) == (MONDAY + timedelta(hours=4), MONDAY)
        assert (row.namespace, row.user) == ("ml", "alice")
    assert (sunday.jobs, sunday.succeeded, monday.jobs, monday.succeeded) == (0, 0, 1, 1)


def test_a_run_across_midnight_and_a_week_boundary_is_split_by_day(session):
    night(session)
    check_split(session)


def test_the_same_split_on_sqlite(sqlite_url):
    engine = make_engine(sqlite_url)
    try:
        with make_session_factory(engine)() as session:
            night(session)
            check_split(session)
            # A window from Sunday 22:00: 6 of the 8 hours, as on PostgreSQL below.
            _, totals = window(session, SUNDAY + timedelta(hours=22), NEXT_MONDAY)
            assert totals.hours.requested_core_hours == approx(18)
    finally:
        engine.dispose()


def test_windows_count_the_days_inside_them_and_the_week_the_run_ended_in(session):
    night(session)
    # From Monday 00:00, a whole day: Monday's half.
    weeks, totals = window(session, MONDAY, NEXT_MONDAY)
    assert [(w.start, w.jobs) for w in weeks] == [(MONDAY, 1)]
    assert (totals.hours.requested_core_hours, totals.hours.used_core_hours) == (
        approx(12),
        approx(4),
    )
    assert totals.run_seconds == approx(4 * 3600)
    # From Sunday 22:00, within Sunday: Sunday's last 2 hours and Monday's 4, 6 of 8:
    # 18 core-hours asked, 6 used, 6 GiB-hours asked, 3 used; all in Monday's week.
    since = SUNDAY + timedelta(hours=22)
    weeks, totals = window(session, since, NEXT_MONDAY)
    assert [(w.start, w.jobs) for w in weeks] == [(WEEK_BEFORE, 0), (MONDAY, 1)]
    hours = totals.hours
    assert (hours.requested_core_hours, hours.used_core_hours) == (approx(18), approx(6))
    assert (hours.requested_gib_hours, hours.used_gib_hours) == (approx(6), approx(3))
    assert totals.run_seconds == approx(6 * 3600)
    # The same as the run's share computed from its summary (the owner's portrait).
    portrait, _ = owner_portrait(session, "user", "alice", since, "gpu", 10, 0, namespace="ml")
    assert portrait.hours.requested_core_hours == approx(18)
    # And the ranking of users over that window.
    [(user, ranked)], count = ranking(session, "user", since, "cpu", 5, 0, end=NEXT_MONDAY)
    assert (user, count, ranked.jobs) == ("alice", 1, 1)
    assert ranked.hours.waste("cpu") == approx(12)
    # A window that ends before the run did holds none of it: a run counts in the
    # window it ended in, though Sunday's 4 hours fell inside this one.
    weeks, totals = window(session, WEEK_BEFORE, MONDAY)
    assert totals.jobs == 0 and totals.hours.requested_core_hours == 0
    # Another namespace's window has none of it.
    assert window(session, WEEK_BEFORE, NEXT_MONDAY, TrendScope("ads"))[1].jobs == 0


def test_a_summary_written_again_replaces_its_days(session):
    """A running job's snapshot: one node asking 2 cores, using 1, sampled Sunday 23:00
    and Monday 01:00 (2 hours: 4 core-hours asked, Sunday and Monday 2 each), then
    again at 03:00 with an OOM kill at 02:00: 4 hours, 8 core-hours asked, Sunday 2 and
    Monday 6, one OOM kill. Counted once, up to its latest sample."""
    job = flat_job(
        session,
        "live",
        start=SUNDAY + timedelta(hours=23),
        cpu_request=2,
        cpu_used=1,
        hours=2,
        status="running",
        namespace="ml",
    )
    summarize_job(session, job)
    session.commit()
    since = SUNDAY
    _, totals = window(session, since, NEXT_MONDAY)
    assert (totals.jobs, totals.running) == (1, 1)
    assert totals.hours.requested_core_hours == approx(4)

    point = {"ts": MONDAY + timedelta(hours=3), "cpu": 1, "memory_mib": 512}
    add_points(session, job, "worker-0", "worker", [point])
    add_event(session, job, MONDAY + timedelta(hours=2), "oom", "worker-0")
    summarize_job(session, job)
    summarize_job(session, job)  # and once more: still one set of days
    session.commit()
    sunday, monday = day_rows(session)
    assert (sunday.requested_core_hours, monday.requested_core_hours) == (approx(2), approx(6))
    assert monday.to_at == MONDAY + timedelta(hours=3)
    _, totals = window(session, since, NEXT_MONDAY)
    assert (totals.jobs, totals.running, totals.hours.oom_count) == (1, 1, 1)
    assert totals.hours.requested_core_hours == approx(8)


def test_a_deleted_job_leaves_no_day_and_no_window_counts_it(session):
    night(session)
    deleted = delete_job(session, "night")
    session.commit()
    assert deleted.rows["job_usage_days"] == 2
    assert day_rows(session) == []
    assert window(session, SUNDAY, NEXT_MONDAY)[1].jobs == 0
    assert ranking(session, "user", SUNDAY, "gpu", 5, 0) == ([], 0)


def test_a_run_no_setting_believes_has_no_day(session):
    """Samples 3,651 days apart: longer than BRAIN_HISTORY_MAX_RUN_DAYS may be set, so
    no row per day of them (the summary is kept, and says why no aggregate counts it)."""
    start = SUNDAY - timedelta(days=3651)
    job = flat_job(session, "ancient", start=start, cpu_request=1, cpu_used=1, hours=3651 * 24)
    summarize_job(session, job)
    session.commit()
    assert day_rows(session) == []


def test_owner_and_namespace_totals_and_priorities_sum_the_day_rows(session, settings):
    """The /metrics totals, the priorities and an owner portrait's totals read the day
    rows, not each run's share computed on its summary."""
    night(session)
    statements: list[str] = []
    event.listen(session.bind, "before_cursor_execute", lambda *a: statements.append(a[2]))
    # From Sunday 22:00: 6 of the 8 hours, 18 core-hours asked and 6 used (as above).
    since = SUNDAY + timedelta(hours=22)
    [(namespace, user, totals)] = owner_totals(session, "user", since)
    assert (namespace, user, totals.jobs) == ("ml", "alice", 1)
    assert totals.hours.requested_core_hours == approx(18)
    [(key, totals)] = totals_by(session, "namespace", since)
    assert (key, totals.hours.used_core_hours) == ("ml", approx(6))
    [(_, group, totals, _)] = priorities(session, "group", since, settings.priority)
    assert (group, totals.run_seconds) == ("alice/resnet", approx(6 * 3600))
    assert statements and not any("job_summaries" in s for s in statements)
    statements.clear()
    totals, [job] = owner_portrait(session, "user", "alice", since, "gpu", 10, 0)
    assert (job.uid, totals.hours.requested_gib_hours) == ("night", approx(6))
    totals_read = [s for s in statements if "job_usage_days" in s]
    assert len(totals_read) == 1 and "job_summaries" not in totals_read[0]
