"""An applied plan becomes the job's desired state (PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import select

from brain.db.models import NodeRow
from brain.domain import RoleSpec
from brain.optimizing.proposal import NodeChange, PlanBody
from brain.services.desired_state import apply_plan
from tests.builders import add_node, make_job, recent_hour


def _cpu(session, job) -> dict[str, float]:
    rows = session.scalars(select(NodeRow).where(NodeRow.job_id == job.id))
    return {n.name: n.cpu for n in rows}


def test_a_plan_that_only_adds_ps_keeps_a_migrated_ps_at_its_own_size(session):
    start = recent_hour()
    roles = {"ps": RoleSpec(count=1, cpu=8, memory_mib=8192)}
    job = make_job(session, "j", start=start, status="running", roles=roles)
    add_node(session, job, "j-edljob-ps-0", "ps", created_at=start, cpu=8, memory_mib=8192)
    moved = NodeChange(role="ps", name="j-edljob-ps-0", cpu=13.4, memory_mib=8192)
    apply_plan(session, job, PlanBody(migrate=[moved]))
    assert _cpu(session, job) == {"j-edljob-ps-0": 13.4}
    # A complete role (count changed, cpu the job's 8): ps-0 keeps 13.4 (it used to drop
    # to 8 in Brain's record while the pod kept 13.4, so the guard undercounted the job)
    apply_plan(session, job, PlanBody(roles={"ps": RoleSpec(count=3, cpu=8, memory_mib=8192)}))
    assert _cpu(session, job) == {"j-edljob-ps-0": 13.4}
    assert job.roles["ps"] == RoleSpec(count=3, cpu=8, memory_mib=8192)
    # A resize of the role does reach every node
    apply_plan(session, job, PlanBody(roles={"ps": RoleSpec(count=3, cpu=6, memory_mib=8192)}))
    assert _cpu(session, job) == {"j-edljob-ps-0": 6}
