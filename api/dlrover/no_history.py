"""What the create stage tells the master for a job without related history.

The create context holds the job's related history. Without any, the plan holds the
optimizers' defaults, which would replace the user's worker size: the master is told the
job's own request instead (an empty body: 0 = keep the ElasticJob's values), and the
stored plan keeps the defaults and says they were not sent.
"""

from __future__ import annotations

from api.dlrover.stages import BrainCall, Reply
from brain.db.models import ScalePlanRow
from brain.optimizing import OptimizerContext
from brain.optimizing.proposal import PlanBody

DEFAULTS_NOT_SENT = (
    "no related history: DLRover was told the job's registered request (0 = keep the "
    "ElasticJob's), not these defaults"
)


def body_to_send(plan: ScalePlanRow, call: BrainCall, context: OptimizerContext | None) -> PlanBody:
    """The plan body the master is told (``context`` None: a replayed OOM's plan, never
    the create stage's)."""
    if call.reply == Reply.create and context is not None and not context.history:
        plan.status_message = DEFAULTS_NOT_SENT
        return PlanBody()
    return plan.body
