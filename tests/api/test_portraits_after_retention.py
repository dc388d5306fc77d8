"""Deleting old raw samples leaves portraits as they were."""

from __future__ import annotations

from sqlalchemy import func, select

from brain.db.models import JobRow, NodeSampleRow
from brain.domain import utcnow
from brain.summaries import summarize_job
from brain.summaries.retention import delete_old_samples
from tests.builders import flat_job, hand_job, recent_hour

PORTRAITS = (
    "/api/v1/portraits/jobs/hand-1",
    "/api/v1/portraits/jobs/hand-1/nodes",
    "/api/v1/portraits/users/alice",
    "/api/v1/portraits/groups/alice/resnet",
    "/api/v1/portraits?by=user",
    "/api/v1/portraits?by=dataset",
)


def _portraits(client) -> list[dict]:
    # "since" is now - days: it moves between requests.
    return [{k: v for k, v in client.get(url).json().items() if k != "since"} for url in PORTRAITS]


def test_portraits_survive_deleting_raw_samples(client, session):
    hand_job(session, t0=recent_hour(5))
    flat_job(session, "other", start=recent_hour(4), cpu_request=8, cpu_used=1)
    for job in session.scalars(select(JobRow)):
        summarize_job(session, job)
    session.commit()
    before = _portraits(client)

    deleted = delete_old_samples(session, older_than_days=1, now=utcnow())
    session.commit()
    middle = _portraits(client)
    # Summarizing again (e.g. `brain summarize --all`) must not lose anything either.
    for job in session.scalars(select(JobRow)):
        summarize_job(session, job)
    session.commit()
    after = _portraits(client)

    # hand-1: 9 node and 4 speed samples; other: 2 node samples.
    assert deleted == 15
    assert session.scalar(select(func.count()).select_from(NodeSampleRow)) == 0
    assert before[0]["summary"]["hours"]["cpu"]["used_core_hours"] == 9.5
    assert middle == before
    assert after == before
