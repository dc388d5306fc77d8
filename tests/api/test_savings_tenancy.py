"""The savings replay sizes each job from its own namespace's runs only: runs another
namespace registers under the same user and job name (so the same group key) change
neither namespace's savings rows, whether the replay is stored or made on request.

Every job asks one worker of 16 cores and 16 GiB for 1 h and is replayed on 13 samples
5 minutes apart. B's runs use 1024 MiB, A's 100 MiB.

By hand, B's row (learned_margin, memory: envelope x (1.3 + 1.0 / sqrt(runs)) + 768 MiB):
b0 is its group's first run, so the create stage keeps the 16 GiB asked; b1 is sized
from b0: 1024 x 2.3 + 768 = 3123.2 -> 3124 MiB, never exceeded: no OOM.
Mixed with A's runs instead, b1 would be sized from b0 and A's three 100 MiB runs
(1024 x (1.3 + 1 / 2) + 768 = 2611.2 MiB), and A's first run from b0 (3124 MiB, not 16 GiB).
"""

from __future__ import annotations

import pytest

from brain.db.models import JobRow
from brain.optimizing import load_registry
from brain.savings.stored import store_pending_savings
from brain.summaries import summarize_job
from tests.api.test_savings import worker_job
from tests.builders import recent_hour
from tests.builders.tenancy import A, B

approx = pytest.approx
B_GROUP = "bob/ctr"


def _b_runs(session) -> list[JobRow]:
    return [
        worker_job(session, "b0", recent_hour(8), B, [1024.0] * 13, group=B_GROUP),
        worker_job(session, "b1", recent_hour(2), B, [1024.0] * 13, group=B_GROUP),
    ]


def _a_runs(session, group: str) -> list[JobRow]:
    """A's three low-usage runs, between B's two."""
    return [
        worker_job(session, f"a{i}", recent_hour(7 - i), A, [100.0] * 13, group=group)
        for i in range(3)
    ]


def _rows(client, session_factory, settings, stored: bool) -> dict[str, dict]:
    if stored:
        assert store_pending_savings(session_factory, settings, load_registry()) == 5
    answer = client.get("/api/v1/savings", params={"days": 30})
    assert answer.status_code == 200, answer.text
    return {row["key"]: row for row in answer.json()["rows"]}


def _history(session, a_group: str) -> None:
    for job in _b_runs(session) + _a_runs(session, a_group):
        summarize_job(session, job)
    session.commit()


@pytest.mark.parametrize("stored", [False, True], ids=["on-request", "stored"])
def test_another_namespaces_runs_in_my_group_leave_my_savings_rows_unchanged(
    client, session, session_factory, settings, stored
):
    _history(session, a_group=B_GROUP)
    rows = _rows(client, session_factory, settings, stored)
    b = rows[B]
    assert (b["jobs"], b["replayed_jobs"]) == (2, 2)
    assert b["requested_gib_h"] == approx(32.0)
    assert b["used_gib_h"] == approx(2.0)
    assert b["brain_gib_h"] == approx(16.0 + 3124 / 1024)
    assert (b["brain_ooms"], b["brain_jobs_with_oom"]) == (0, 0)
    # A's first run is its group's first in team-a: the 16 GiB asked, not b0's 3124 MiB;
    a = rows[A]
    assert a["jobs"] == 3
    # a1 and a2 are sized from A's 100 MiB peaks (998 and 969 MiB), but a plan shrinks a
    # size at most 8-fold (max_change_factor): 16384 / 8 = 2048 MiB each.
    assert a["brain_gib_h"] == approx(16.0 + 2.0 + 2.0)
    assert (a["brain_ooms"], a["brain_jobs_with_oom"]) == (0, 0)


@pytest.mark.parametrize("stored", [False, True], ids=["on-request", "stored"])
def test_the_rows_equal_those_of_a_control_whose_runs_share_no_group(
    client, session, session_factory, settings, stored
):
    _history(session, a_group=B_GROUP)
    attacked = _rows(client, session_factory, settings, stored)
    session.query(JobRow).delete()
    session.commit()
    _history(session, a_group="alice/other")
    control = _rows(client, session_factory, settings, stored)
    assert attacked == control
