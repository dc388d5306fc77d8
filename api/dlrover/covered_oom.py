"""A worker's OOM that an OOM fix of every worker already covers, as the master reads it.

Brain answers such a kill with no change (one fix per role, not one per pod). The master
reads the worker group's memory for each killed pod it asks about, and relaunches the
pod with it; told nothing, it would relaunch that pod at the size that was killed. So it
is told the covering fix's worker group again.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from api.dlrover.stages import BrainCall, Reply
from brain.db.models import JobRow
from brain.optimizing.proposal import PlanBody
from brain.services import plans


def with_covering_fix(session: Session, job: JobRow, call: BrainCall, body: PlanBody) -> PlanBody:
    """``body``, or the body of the fix that covers a worker OOM answered with none."""
    if call.reply != Reply.worker_oom or body.roles or body.migrate:
        return body
    covering = next(
        (r.evidence["covered_by_plan"] for r in body.reasons if "covered_by_plan" in r.evidence),
        None,
    )
    if not isinstance(covering, int):
        return body
    return plans.get_plan(session, job, covering).body
