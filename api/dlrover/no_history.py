"""What the create stage tells the master for a job Brain knows no request of.

Without related history the create plan is the job's own request (its registration,
or the ElasticJob's adopted by ``elasticjob_request``), held to its limits: the master
is told that plan, as a REST caller is. Only a job registered with no roles at all, and
no related history, gets a plan of the optimizers' defaults: sent, they would replace
the user's worker size. The master is told the empty body instead (0 = keep the
ElasticJob's values), and the stored plan keeps the defaults and says they were not sent.
"""

from __future__ import annotations

from api.dlrover.stages import BrainCall, Reply
from brain.db.models import ScalePlanRow
from brain.optimizing import OptimizerContext
from brain.optimizing.proposal import PlanBody

DEFAULTS_NOT_SENT = (
    "no related history and no request known: DLRover was told to keep the ElasticJob's "
    "values (0), not these defaults"
)


def body_to_send(plan: ScalePlanRow, call: BrainCall, context: OptimizerContext | None) -> PlanBody:
    """The plan body the master is told (``context`` None: a replayed OOM's plan, never
    the create stage's)."""
    unknown = context is not None and not context.history and not context.job.roles
    if call.reply == Reply.create and unknown:
        plan.status_message = DEFAULTS_NOT_SENT
        return PlanBody()
    return plan.body
