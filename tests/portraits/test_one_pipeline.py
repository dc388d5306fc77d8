"""Suggestions and plans run the same pipeline: the same optimizers, reasons and bounds."""

from __future__ import annotations

from brain.config import Settings
from brain.domain import RoleSpec, Stage
from brain.optimizing import Reason
from brain.portraits.suggestions import SuggestionQuery, suggest
from brain.services.plans import optimize
from tests.builders import make_job, recent_hour
from tests.builders.optimizers import registry

SETTINGS = Settings(
    stage_optimizers={"create": ["broken", "worker_size"]},
    optimizer_settings={"worker_size": {"cpu": 100}},
    node_max_cpu=16,
)
FAILED = Reason("broken", "optimizer failed: RuntimeError('boom'); ignored")
CAPPED = "capped worker.cpu from 100.0 to the largest node's 16.0"


def test_a_plan_and_a_suggestion_explain_the_same_failure_and_cap(session):
    job = make_job(
        session,
        "p-1",
        start=recent_hour(),
        status="pending",
        roles={"worker": RoleSpec(count=2, cpu=2, memory_mib=500)},
    )
    plan = optimize(session, job, registry(), SETTINGS, Stage.create).plan
    suggestion = suggest(session, registry(), SETTINGS, SuggestionQuery(user="alice", name="x"))

    assert plan.body.optimizers == ["broken", "worker_size"]
    assert plan.body.reasons[0] == suggestion.reasons[0] == FAILED
    assert CAPPED in [r.message for r in plan.body.reasons]
    assert CAPPED in [r.message for r in suggestion.reasons]
    # The plan completes the role from the job; the suggestion has no last run to use.
    assert plan.body.roles["worker"] == RoleSpec(count=2, cpu=16, memory_mib=1000)
    [worker] = suggestion.roles
    assert (worker.count, worker.cpu_request, worker.memory_mib) == (None, 16, 1000)
