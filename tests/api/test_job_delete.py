"""DELETE /api/v1/jobs/{uid}: a job goes with everything stored about it, in one
transaction, and only for a caller that may write its namespace."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from brain.db.models import (
    EventRow,
    JobRow,
    JobSummaryRow,
    NodeRow,
    NodeSampleRow,
    NodeSummaryRow,
    RoleSummaryRow,
    ScalePlanRow,
)
from brain.domain import utcnow
from tests.builders import bearer, job_body, record_run, token_secret
from tests.builders.tenancy import B_PS, B_WORKER, A, B

TABLES = (
    JobRow,
    NodeRow,
    NodeSampleRow,
    EventRow,
    ScalePlanRow,
    JobSummaryRow,
    RoleSummaryRow,
    NodeSummaryRow,
)


def _counts(session) -> dict[str, int]:
    session.expire_all()
    return {t.__tablename__: session.scalar(select(func.count()).select_from(t)) for t in TABLES}


def _recorded(client, headers, namespace: str) -> None:
    """Job ``run-1`` of ``namespace``: 2 nodes x 5 samples, an OOM event, a create plan,
    summarized when it succeeded."""
    start = (utcnow() - timedelta(days=1)).replace(microsecond=0)
    body = job_body(namespace=namespace, roles={"ps": B_PS, "worker": B_WORKER})
    usage = {"run-1-edljob-worker-0": (3.0, 4096.0), "run-1-edljob-ps-0": (2.0, 2048.0)}
    record_run(
        client,
        "run-1",
        body,
        usage,
        start=start,
        sample_minutes=range(0, 61, 15),
        finished_minutes=60,
        headers=headers,
    )
    oom = [{"ts": (start + timedelta(minutes=30)).isoformat(), "kind": "oom"}]
    response = client.post("/api/v1/jobs/run-1/events", json=oom, headers=headers)
    assert response.status_code == 200, response.text
    response = client.post("/api/v1/jobs/run-1/optimize", json={"stage": "create"}, headers=headers)
    assert response.status_code == 200, response.text


def test_delete_removes_the_job_and_everything_of_it(teams, session):
    client, headers = teams
    _recorded(client, headers[A], A)
    _recorded(client, headers[B], B)
    before = _counts(session)
    # Two jobs of the same shape: each holds half of every table.
    assert before["jobs"] == 2 and before["node_samples"] == 20 and before["events"] == 2

    response = client.delete("/api/v1/jobs/run-1", headers=headers[A])

    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["uid"], answer["namespace"]) == ("run-1", A)
    rows = answer["deleted_rows"]
    assert (rows["nodes"], rows["node_samples"], rows["events"], rows["plans"]) == (2, 10, 1, 1)
    assert (rows["job_summaries"], rows["role_summaries"], rows["node_summaries"]) == (1, 2, 2)
    after = _counts(session)
    assert after == {table: count // 2 for table, count in before.items()}
    assert client.get("/api/v1/jobs/run-1", headers=headers[A]).status_code == 404
    assert client.get("/api/v1/jobs/run-1", headers=headers[B]).json()["namespace"] == B


def test_another_namespaces_token_gets_404_and_deletes_nothing(teams, session, db):
    client, headers = teams
    _recorded(client, headers[A], A)
    before = _counts(session)

    response = client.delete("/api/v1/jobs/run-1", headers=headers[B])
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    # Naming the namespace is refused too, and a read-scope token may not delete at all.
    named = client.delete("/api/v1/jobs/run-1", params={"namespace": A}, headers=headers[B])
    assert named.status_code == 403
    reader = bearer(token_secret(db, "reader", "read"))
    assert client.delete("/api/v1/jobs/run-1", headers=reader).status_code == 403
    assert _counts(session) == before

    # The admin may delete it, naming its namespace like any other job call.
    admin = client.delete("/api/v1/jobs/run-1", params={"namespace": A}, headers=headers["admin"])
    assert admin.status_code == 200
    assert _counts(session)["jobs"] == 0


def test_a_uid_of_two_namespaces_needs_the_namespace(teams, session):
    client, headers = teams
    _recorded(client, headers[A], A)
    _recorded(client, headers[B], B)

    ambiguous = client.delete("/api/v1/jobs/run-1", headers=headers["admin"])
    assert ambiguous.status_code == 409 and ambiguous.json()["error"]["field"] == "namespace"
    assert _counts(session)["jobs"] == 2
    named = client.delete("/api/v1/jobs/run-1", params={"namespace": B}, headers=headers["admin"])
    assert named.json()["namespace"] == B
    assert client.get("/api/v1/jobs/run-1", headers=headers["admin"]).json()["namespace"] == A
