"""The master asks for the PS plan right after the worker one, both from the estimate
stage: one estimate answers both if it is recent enough."""

from __future__ import annotations

from sqlalchemy.orm import Session

from api.dlrover.stages import BrainCall, Reply
from brain.db.models import JobRow, ScalePlanRow
from brain.domain import Stage, as_utc, utcnow
from brain.services import plans

ESTIMATE_REUSE_S = 600
# The job's newest plans among which the estimate is looked for.
LOOK_BACK_PLANS = 5


def reusable_estimate(session: Session, job: JobRow, call: BrainCall) -> ScalePlanRow | None:
    """The job's estimate of the last ``ESTIMATE_REUSE_S`` seconds, for the PS ask of the
    estimate stage; None for any other call, or without one."""
    if call.stage != Stage.estimate or call.reply != Reply.ps:
        return None
    for plan in plans.list_plans(session, job, limit=LOOK_BACK_PLANS):
        recent = (utcnow() - as_utc(plan.created_at)).total_seconds() < ESTIMATE_REUSE_S
        if plan.stage == Stage.estimate.value and recent:
            return plan
    return None
