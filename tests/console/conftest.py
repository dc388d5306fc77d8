"""Data the console's tests look at: the hand-worked job, and a few more of its user."""

from __future__ import annotations

import pytest

from brain.summaries import summarize_job
from tests.builders import flat_job, hand_job, recent_hour


@pytest.fixture
def history(session):
    """hand-1 (alice, namespace ml: hand numbers of tests/summaries/test_compute.py), two
    flat jobs of alice in ml and one of bob in namespace ads."""
    t0 = recent_hour()
    jobs = [hand_job(session, t0=t0)]
    jobs[0].namespace = "ml"
    jobs.append(flat_job(session, "flat-a", start=t0, cpu_request=4, cpu_used=1, namespace="ml"))
    jobs.append(
        flat_job(
            session,
            "flat-b",
            start=t0,
            cpu_request=2,
            cpu_used=2,
            hours=2,
            gpu=2,
            gpu_util=0.25,
            gpu_type="a100",
            namespace="ml",
            name="bert",
        )
    )
    jobs.append(
        flat_job(session, "bob-1", start=t0, cpu_request=8, cpu_used=2, user="bob", namespace="ads")
    )
    for job in jobs:
        summarize_job(session, job)
    session.commit()
    return jobs
