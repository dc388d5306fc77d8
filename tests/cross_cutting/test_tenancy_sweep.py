"""Every route of the app (API, console, docs) and every gRPC method, driven by two
namespaces: team A's token touches nothing of team B's, and reads neither B's uids nor
B's numbers anywhere, directly or through derived figures.

B's runs use 54,321 MiB (a number that appears nowhere of A's); A's use 11,111, under
B's user, dataset and group. B's figures are read before A exists and again after A's
runs and A's sweep over every route (with B's uid, plan id, node, user, group and
namespace where a path takes one, and with its own): B's jobs, plans, portraits,
priorities, savings and /metrics series read exactly as before.

The routes are walked from the app itself, not from a list: a new route is swept as
soon as it exists, and one whose path parameter this sweep cannot fill fails it.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

import grpc
import pytest
from dlrover.proto import brain_pb2, brain_pb2_grpc
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from api.console.session import COOKIE
from api.server import dlrover_grpc
from api.state import server_state
from brain.config import Settings
from brain.domain import utcnow
from brain.savings.stored import store_pending_savings
from tests.builders import job_body, node_point
from tests.builders.tenancy import A, B, finished_run, team_headers
from tests.ports import free_port

B_MIB, A_MIB = 54_321, 11_111
# B's number as a JSON number of its own (not digits inside another number's decimals).
B_NUMBER = re.compile(rf"(?<![\d.]){B_MIB}(\.0+)?(?![\d.])")
REGISTER = ("PUT", "/api/v1/jobs/{uid}")
# What names B or B's data in an answer (B's namespace only in the answers that are
# not an echo of what A sent).
B_TEXTS = ("b-run-", "b-live", B)
PATH_PARAMETER = re.compile(r"{(\w+)(?::path)?}")


def app_routes(app) -> list[tuple[str, str]]:
    """Every (method, path template) the app routes, its included routers' too."""

    def walk(routes, prefix: str):
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:
                yield from walk(inner.routes, prefix + route.include_context.prefix)
            elif isinstance(route, APIRoute):
                for method in route.methods:
                    yield method, prefix + route.path

    return sorted(set(walk(app.routes, "")))


# Deletions come after every other operation, so that A deleting its own job (allowed)
# leaves the rest of the sweep something of A's to read. Registering B's uid registers
# A's own job of that uid (uids are per namespace): last, so that every other operation
# on B's uid finds no job of A's. Signing out last too.
OPERATIONS = sorted(
    app_routes(create_app(Settings())),
    key=lambda operation: (
        operation == REGISTER,
        operation[0] == "DELETE",
        operation[1] == "/ui/sign-out",
    ),
)


@pytest.fixture
def sweep(settings, db):
    """Teams A and B with tokens, /metrics tenant series for tokens only, read afresh."""
    tokens = team_headers(db)
    scoped = settings.model_copy(update={"metrics_tenant_series": "token", "metrics_cache_s": 0})
    with TestClient(create_app(scoped)) as client:
        yield client, tokens


def _live_job(client, headers, team: str, uid: str, memory_mib: float) -> dict:
    """A running job with samples, speed, an OOM and a plan of every stage."""
    start = (utcnow() - timedelta(hours=2)).replace(microsecond=0)
    body = job_body(
        name="ctr",
        user="bob",
        dataset="clicks",
        namespace=team,
        status="running",
        started_at=start.isoformat(),
        roles={
            "ps": {"count": 1, "cpu": 4, "memory_mib": 8192},
            "worker": {"count": 2, "cpu": 4, "memory_mib": 90_000},
        },
    )
    assert client.put(f"/api/v1/jobs/{uid}", json=body, headers=headers).status_code == 201
    node = f"{uid}-edljob-worker-0"
    ts = [(start + timedelta(minutes=m)).isoformat() for m in range(0, 61, 15)]
    batch = {
        "nodes": [node_point(node, t, 3.0, memory_mib) for t in ts],
        "speed": [
            {"ts": t, "global_step": 100 * i, "steps_per_sec": 10.0, "workers": 2}
            for i, t in enumerate(ts)
        ],
    }
    assert (
        client.post(f"/api/v1/jobs/{uid}/samples", json=batch, headers=headers).status_code == 200
    )
    oom = [{"ts": ts[-1], "kind": "oom", "node": node}]
    assert client.post(f"/api/v1/jobs/{uid}/events", json=oom, headers=headers).status_code == 200
    plans = {}
    for stage, extra in (
        ("create", {}),
        ("estimate", {}),
        ("running", {}),
        ("oom", {"node": node}),
    ):
        answer = client.post(
            f"/api/v1/jobs/{uid}/optimize", json={"stage": stage, **extra}, headers=headers
        )
        assert answer.status_code == 200, (stage, answer.text)
        plans[stage] = answer.json()
    return {"uid": uid, "node": node, "plan_id": plans["create"]["id"], "plans": plans}


def _snapshot(client, headers, uid: str) -> dict:
    """What B reads of its own: jobs, plans, portraits, and the derived figures."""
    paths = [
        f"/api/v1/jobs/{uid}",
        f"/api/v1/jobs/{uid}/samples",
        f"/api/v1/jobs/{uid}/nodes",
        f"/api/v1/jobs/{uid}/events",
        f"/api/v1/jobs/{uid}/plans",
        f"/api/v1/portraits/jobs/{uid}",
        f"/api/v1/portraits/jobs/{uid}/nodes",
        "/api/v1/jobs?limit=100",
        f"/api/v1/priorities?namespace={B}",
        f"/api/v1/priorities?namespace={B}&by=group",
        f"/api/v1/portraits/users/bob?namespace={B}&days=30",
        f"/api/v1/portraits/groups/bob/ctr?namespace={B}&days=30",
        f"/api/v1/portraits?namespace={B}&days=30",
        f"/api/v1/portraits?namespace={B}&days=30&by=group",
        "/api/v1/savings?days=30",
        "/api/v1/savings?days=30&by=group",
    ]
    answers = {path: client.get(path, headers=headers).json() for path in paths}
    for answer in answers.values():
        if isinstance(answer, dict):
            answer.pop("since", None)  # the window's start moves with the clock
            # a running job's portrait is computed at each read
            answer.get("summary", {}).pop("computed_at", None)
    answers["/metrics"] = _tenant_series(client.get("/metrics", headers=headers).text)
    return answers


def _tenant_series(exposition: str) -> dict:
    """The per-tenant series of a /metrics answer (the service's own counters move with
    every request, anyone's)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name.startswith(("brain_namespace_", "brain_user_", "brain_group_"))
    }


def _path(template: str, values: dict) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1)
        assert name in values, f"the sweep cannot fill {{{name}}} of {template}: add it"
        return str(values[name])

    return PATH_PARAMETER.sub(value, template)


def _body(method: str, path: str, values: dict) -> dict | list | None:
    bodies = {
        ("PUT", "/api/v1/jobs/{uid}"): job_body(namespace=A, user="bob", dataset="clicks"),
        ("PATCH", "/api/v1/jobs/{uid}"): {"status": "failed", "exit_reason": "by team A"},
        ("POST", "/api/v1/jobs/{uid}/samples"): {
            "nodes": [node_point(values["node"], utcnow().isoformat(), 0.1, 1)]
        },
        ("PUT", "/api/v1/jobs/{uid}/nodes/{name}"): {"role": "worker", "cpu": 1, "memory_mib": 1},
        ("POST", "/api/v1/jobs/{uid}/events"): [
            {"ts": utcnow().isoformat(), "kind": "oom", "node": values["node"]}
        ],
        ("POST", "/api/v1/jobs/{uid}/optimize"): {"stage": "create"},
        ("POST", "/api/v1/jobs/{uid}/plans/{plan_id}/status"): {"status": "rejected"},
        ("POST", "/api/v1/cluster/state"): {"source": "team-a", "nodes": 1, "free_cpu": 0},
        ("POST", "/api/v1/tokens"): {"name": "a-made", "scope": "admin"},
        ("POST", "/api/v1/retention"): {"older_than_days": 1},
    }
    return bodies.get((method, path))


def test_team_a_reads_nothing_of_team_b_and_changes_nothing_of_it(sweep):
    client, tokens = sweep
    admin = tokens["admin"]
    state = {"source": "volcano", "nodes": 10, "free_cpu": 1, "pending_cpu": 100}
    state["ts"] = (utcnow() - timedelta(seconds=30)).isoformat()
    assert client.post("/api/v1/cluster/state", json=state, headers=admin).status_code == 200
    for i in range(3):
        finished_run(client, tokens[B], f"b-run-{i}", B, cpu=3, memory_mib=B_MIB, days_ago=2 + i)
    b = _live_job(client, tokens[B], B, "b-live", B_MIB)
    before = _snapshot(client, tokens[B], "b-live")
    # B's derived figures are there to be moved: its savings and /metrics series.
    assert before["/api/v1/savings?days=30"]["total"]["jobs"] == 3
    assert (("brain_namespace_jobs", (("namespace", B),))) in before["/metrics"]

    # A, under B's user, dataset and group: runs before B's (so that, were they mixed,
    # B's first run would be sized from A's small peaks), a live job, and the sweep.
    for i in range(3):
        finished_run(client, tokens[A], f"a-run-{i}", A, cpu=3, memory_mib=A_MIB, days_ago=5 + i)
    a = _live_job(client, tokens[A], A, "a-live", A_MIB)

    # Every optimizer stage of A's job learned from A's runs only.
    for stage, plan in a["plans"].items():
        text = json.dumps(plan)
        assert not any(t in text for t in B_TEXTS), (stage, text[:500])
        assert not B_NUMBER.search(text), (stage, text[:500])

    a_secret = tokens[A]["Authorization"].removeprefix("Bearer ")
    answers = []
    for method, template in OPERATIONS:
        for target in (b, a):
            values = {
                "uid": target["uid"],
                "plan_id": target["plan_id"],
                "name": target["node"] if "nodes" in template else "team-b",
                "node": target["node"],
                "pod": target["node"],
                "namespace": B if target is b else A,
                "user": "bob",
                "group": "bob/ctr",
            }
            path = _path(template, values)
            body = _body(method, template, values)
            # On its own targets A names its namespace, so that aggregates answer it too.
            params = {"namespace": A} if target is a else {}
            if template.endswith("/latest"):
                params["wait"] = 0
            console = template.startswith("/ui")
            if console:  # the console's session cookie holds A's token
                client.cookies.set(COOKIE, a_secret)
            headers = None if console else tokens[A]
            form = {"token": a_secret} if template == "/ui/sign-in" else None
            answer = client.request(
                method, path, json=body, data=form, params=params, headers=headers
            )
            client.cookies.clear()
            # An answer may repeat what A sent (a 404 names the uid asked for): not a leak.
            echoed = answer.text
            for sent in (target["uid"], target["node"], values["namespace"], values["name"]):
                echoed = echoed.replace(sent, "") if sent in path else echoed
            answers.append((method, path, answer.status_code, echoed))
            assert answer.status_code < 500, (method, path, answer.text)
            if console and method == "GET" and target is a and template != "/ui/sign-in":
                # A's own pages answer A (signed in by the cookie), or refuse it a view of
                # every namespace (suggestions): the sweep reads them.
                assert answer.status_code in (200, 403), (path, answer.text[:300])
                assert "sign-in" not in answer.url.path, path
            if target is b and "{uid}" in template and not console:
                # another namespace's job: as missing; a PUT registers A's own job
                expected = 201 if (method, template) == REGISTER else 404
                assert answer.status_code == expected, (method, path, answer.text)

    assert {(m, t) for m, t in OPERATIONS} >= {("GET", "/metrics"), ("GET", "/ui/jobs/{uid}")}
    for method, path, status, text in answers:
        found = [text[max(text.find(t) - 80, 0) : text.find(t) + 40] for t in B_TEXTS if t in text]
        assert not found, (method, path, status, found)
        assert not B_NUMBER.search(text), (method, path, status, text[:500])
    # Nothing of B's changed: job, samples, nodes, events, plans, portraits, priorities,
    # rankings, savings (replayed and stored as the summary refresher stores them, which
    # reads every namespace's jobs) and its /metrics series.
    state = server_state(client.app)
    store_pending_savings(state.session_factory, state.settings, state.registry)
    after = _snapshot(client, tokens[B], "b-live")
    for path, seen in before.items():
        assert after[path] == seen, path


def _grpc_requests(uid: str, namespace: str) -> dict:
    """One request per method of DLRover's Brain service, naming B's job as a master
    would: an exit report, a plan, its metrics."""
    exit_report = brain_pb2.JobMetrics(job_exit_reason="Failed")
    exit_report.job_meta.uuid = uid
    exit_report.job_meta.name = namespace  # how a 0.6.1 master sends its namespace
    plan = brain_pb2.OptimizeRequest(type="job_stage_create")
    job = plan.jobs.add()
    job.uid, job.namespace = uid, namespace
    return {
        "persist_metrics": exit_report,
        "optimize": plan,
        "get_job_metrics": brain_pb2.JobMetricsRequest(job_uuid=uid),
    }


def test_a_namespace_token_is_refused_every_grpc_method_and_changes_nothing(settings, db):
    """The gRPC service names jobs by uid alone, so it refuses namespace-limited tokens
    outright: every method, enumerated from the service's descriptor."""
    tokens = team_headers(db)
    port = free_port()
    app = create_app(settings.model_copy(update={"grpc_port": port}), parts=[dlrover_grpc])
    methods = brain_pb2.DESCRIPTOR.services_by_name["Brain"].methods
    with TestClient(app) as client, grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        b = _live_job(client, tokens[B], B, "b-live", B_MIB)
        before = _snapshot(client, tokens[B], b["uid"])
        requests = _grpc_requests(b["uid"], B)
        assert set(requests) == {m.name for m in methods}, "a new gRPC method: sweep it"
        a_token = [("authorization", tokens[A]["Authorization"])]
        for method in methods:
            call = channel.unary_unary(
                f"/{method.containing_service.full_name}/{method.name}",
                request_serializer=lambda message: message.SerializeToString(),
                response_deserializer=lambda raw: raw,
            )
            with pytest.raises(grpc.RpcError) as refused:
                call(requests[method.name], metadata=a_token, timeout=10)
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED, method.name
            assert "limited to namespaces" in refused.value.details()
            assert b["uid"] not in refused.value.details()
        # The same calls with a token for every namespace do reach B's job: the refusal
        # above is the token's, not a missing job's.
        stub = brain_pb2_grpc.BrainStub(channel)
        admin = [("authorization", tokens["admin"]["Authorization"])]
        metrics = stub.get_job_metrics(requests["get_job_metrics"], metadata=admin, timeout=10)
        assert json.loads(metrics.job_metrics)["job"]["namespace"] == B
        after = _snapshot(client, tokens[B], b["uid"])
    for path, seen in before.items():
        assert after[path] == seen, path
