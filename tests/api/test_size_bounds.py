"""Every size a caller can make Brain keep is bounded, and list answers stay under 1 MiB
at `limit=10` whatever was stored (even rows stored before the bounds existed)."""

from __future__ import annotations

from datetime import timedelta

from brain.db.models import JobRow, ScalePlanRow
from brain.domain import RoleSpec, utcnow
from brain.optimizing.proposal import NodeChange, PlanBody, Reason
from brain.services import plan_size
from tests.builders import job_body, node_point

MIB = 1024 * 1024


def _roles(n: int) -> dict:
    return {f"r{i}": {"count": 1, "cpu": 1, "memory_mib": 1024} for i in range(n)}


def test_a_job_declares_at_most_16_roles(client):
    assert client.put("/api/v1/jobs/j", json=job_body(roles=_roles(16))).status_code == 201
    for n in (17, 100_000):
        response = client.put("/api/v1/jobs/j", json=job_body(roles=_roles(n)))
        assert response.status_code == 422
        assert response.json()["error"]["field"] == "roles"
    assert len(client.get("/api/v1/jobs/j").json()["roles"]) == 16


def test_nodes_cannot_add_roles_beyond_16(client):
    assert client.put("/api/v1/jobs/j", json=job_body(roles=_roles(15))).status_code == 201
    ts = (utcnow() - timedelta(minutes=5)).isoformat()
    # a 16th role through its nodes is fine; a 17th is refused, and nothing of it is kept
    sixteenth = [node_point("j-edljob-extra-0", ts, 1, 100)]
    assert client.post("/api/v1/jobs/j/samples", json={"nodes": sixteenth}).status_code == 200
    seventeenth = [node_point("j-edljob-more-0", ts, 1, 100)]
    response = client.post("/api/v1/jobs/j/samples", json={"nodes": seventeenth})
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "role"
    assert [n["name"] for n in client.get("/api/v1/jobs/j/nodes").json()] == ["j-edljob-extra-0"]


def test_a_plan_is_cut_to_what_brain_stores():
    body = PlanBody(
        roles={"worker": RoleSpec(count=4)},
        remove=[NodeChange("worker", f"w-{i}") for i in range(600)],
        launch=[NodeChange("worker") for _ in range(10)],
        reasons=[Reason("x", "m" * 3000, {"nodes": ["n" * 100] * 50})]
        + [Reason("x", f"reason {i}") for i in range(149)],
    )
    cut = plan_size.bounded(body)
    # 500 nodes named at most: the 600 removals give 500, no room is left for launches
    assert (len(cut.remove), len(cut.launch)) == (500, 0)
    assert cut.roles == body.roles
    # 99 of the 150 reasons, then the reason saying what was cut: 100
    assert len(cut.reasons) == 100
    first = cut.reasons[0]
    assert len(first.message) == 2000 and first.message.endswith("[cut by Brain]")
    # 50 names of 100 characters in quotes, commas and {"nodes":[...]}: 5,161 bytes
    assert first.evidence == {"omitted": "5161 bytes of evidence, over the 4096 kept"}
    assert cut.reasons[-1].evidence["cuts"] == [
        "remove: 500 of 600 nodes named",
        "launch: 0 of 10 nodes named",
        "reasons: 99 of 150 kept",
    ]
    small = PlanBody(roles={"worker": RoleSpec(count=4)}, reasons=[Reason("x", "fine")])
    assert plan_size.bounded(small) is small


def _huge_body(i: int) -> PlanBody:
    """About 400 KB: as a plan stored before plans were bounded could be."""
    return PlanBody(
        migrate=[NodeChange("worker", f"plan-{i}-node-{n:05d}" + "x" * 40) for n in range(4000)]
    )


def test_a_list_of_plans_stays_under_1_mib_whatever_was_stored(client, session):
    assert client.put("/api/v1/jobs/j", json=job_body()).status_code == 201
    job = session.query(JobRow).one()
    now = utcnow()
    for i in range(10):
        session.add(
            ScalePlanRow(
                job_id=job.id,
                stage="running",
                status="proposed",
                body=_huge_body(i),
                created_at=now,
                updated_at=now,
            )
        )
    session.commit()
    seen = []
    before = None
    for _ in range(10):  # bounded: 10 plans, at least one per page
        params = {"limit": 10} | ({"before": before} if before else {})
        page = client.get("/api/v1/jobs/j/plans", params=params)
        assert page.status_code == 200
        assert len(page.content) <= MIB
        ids = [p["id"] for p in page.json()]
        if not ids:
            break
        # 400 KB each: two fit in 1 MiB, never three
        assert len(ids) <= 2
        seen += ids
        before = ids[-1]
    assert seen == list(range(10, 0, -1))


def test_a_list_of_jobs_stays_under_1_mib_whatever_was_stored(client, session):
    now = utcnow()
    for i in range(10):
        # 8,000 roles: stored before roles were bounded, about 600 KB as JSON each
        roles = {f"r{n}": RoleSpec(count=1, cpu=1, memory_mib=1024) for n in range(8000)}
        session.add(
            JobRow(
                uid=f"old-{i}",
                name="old",
                user="alice",
                group_key="alice/old",
                strategy="ps",
                roles=roles,
                status="pending",
                created_at=now - timedelta(minutes=i),
                updated_at=now,
            )
        )
    session.commit()
    seen, cursor = [], None
    for _ in range(10):
        params = {"limit": 10} | ({"cursor": cursor} if cursor else {})
        page = client.get("/api/v1/jobs", params=params)
        assert page.status_code == 200
        assert len(page.content) <= MIB
        body = page.json()
        assert 1 <= len(body["items"]) <= 1
        seen += [j["uid"] for j in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == [f"old-{i}" for i in range(10)]
