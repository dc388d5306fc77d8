"""The create stage and a suggestion choose the same runs for the same question: GPU
type and run length filter the related runs before the newest are counted."""

from __future__ import annotations

from datetime import timedelta

from brain.config import Settings
from brain.domain import RoleSpec, Stage, utcnow
from brain.portraits.suggestions import SuggestionQuery, suggest
from brain.services.optimizer_context import build_context
from brain.summaries import summarize_job
from tests.builders import flat_job, make_job, recent_hour
from tests.builders.optimizers import registry

SETTINGS = Settings(stage_optimizers={"create": []})


def _run(session, uid, days_ago, gpu_type, hours=1.0):
    job = flat_job(
        session,
        uid,
        start=recent_hour(days_ago),
        hours=hours,
        cpu_request=4,
        cpu_used=2,
        user="alice",
        dataset="imagenet",
        gpu_type=gpu_type,
    )
    summarize_job(session, job)


def _new_job(session, gpu_type):
    return make_job(
        session,
        "next",
        start=utcnow() - timedelta(minutes=1),
        status="pending",
        user="alice",
        dataset="imagenet",
        gpu_type=gpu_type,
        roles={"worker": RoleSpec(count=1)},
    )


def test_older_runs_on_the_jobs_gpu_type_are_not_hidden_by_newer_ones_on_another(session):
    for i in range(3):
        _run(session, f"v100-{i}", 20 - i, "V100")
    for i in range(10):
        _run(session, f"t4-{i}", 10 - i * 0.5, "T4")  # the 10 newest, on T4

    context = build_context(session, _new_job(session, "V100"), Stage.create, SETTINGS)
    suggestion = suggest(
        session,
        registry(),
        SETTINGS,
        SuggestionQuery(user="alice", dataset="imagenet", gpu_type="V100"),
    )

    expected = ["v100-2", "v100-1", "v100-0"]
    assert [h.job.uid for h in context.history] == expected  # it found none
    assert [r.uid for r in suggestion.basis.runs] == expected


def test_long_runs_are_not_hidden_by_newer_short_ones(session):
    for i in range(3):
        _run(session, f"long-{i}", 20 - i, None, hours=1.0)
    for i in range(10):
        _run(session, f"short-{i}", 10 - i * 0.5, None, hours=0.25)  # 15 min < 30 min

    context = build_context(session, _new_job(session, None), Stage.create, SETTINGS)

    uids = [h.job.uid for h in context.history]
    # the 10 newest (short) runs, then the 3 long ones gpu_cpu needs (over 1800 s)
    assert uids == [f"short-{i}" for i in reversed(range(10))] + ["long-2", "long-1", "long-0"]
