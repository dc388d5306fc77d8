"""The running stage uses the cluster's state, through the API on PostgreSQL: a pushed
state that is short makes the jobs whose last worker brings least give elastic workers
back (named removals, within min_count), a state with little room cuts growth, and a
stale state is not used. Numbers worked by hand in the comments."""

from __future__ import annotations

from datetime import timedelta

from brain.db.models import ScalePlanRow
from brain.domain import RoleSpec
from brain.optimizing.proposal import PlanBody
from brain.services.cluster import elastic_jobs
from tests.builders import job_body, make_job, node_point, recent_hour

T0 = recent_hour()


def _ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _register(client, uid: str, workers: int, cpu: float, speeds, **bounds) -> None:
    roles = {"worker": {"count": workers, "cpu": cpu, "memory_mib": 4096, **bounds}}
    body = job_body(roles=roles, status="running", strategy="allreduce", started_at=_ts(0))
    assert client.put(f"/api/v1/jobs/{uid}", json=body).status_code == 201
    # every worker node reports, and the speed: (workers, steps/s) one minute apart,
    # the last at 30 min
    nodes = [node_point(f"{uid}-edljob-worker-{i}", _ts(1800), cpu, 2000) for i in range(workers)]
    start = 1800 - 60 * (len(speeds) - 1)
    speed = [
        {"ts": _ts(start + 60 * k), "global_step": 1000 * k, "steps_per_sec": sps, "workers": n}
        for k, (n, sps) in enumerate(speeds)
    ]
    pushed = client.post(f"/api/v1/jobs/{uid}/samples", json={"nodes": nodes, "speed": speed})
    assert pushed.status_code == 200


def _push_state(client, at_s: float, free_cpu: float, pending_cpu: float) -> None:
    body = {"source": "volcano", "ts": _ts(at_s), "nodes": 10, "free_cpu": free_cpu}
    body["pending_cpu"] = pending_cpu
    assert client.post("/api/v1/cluster/state", json=body).status_code == 200


def _running(client, uid: str, *optimizers: str) -> dict:
    body = {"stage": "running", "optimizers": list(optimizers)}
    response = client.post(f"/api/v1/jobs/{uid}/optimize", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _cluster_reason(plan: dict) -> dict:
    return next(r for r in plan["reasons"] if r["message"].startswith("cluster state from"))


def test_a_short_cluster_takes_workers_back_from_the_lowest_gain_first(client):
    # lo: 4 -> 6 workers of 4 cores took it from 100 to 104 steps/s: its last worker
    # brings (104 - 100) / 2 / 104 = 1.9 %; min_count 4, so 2 are elastic
    _register(client, "lo", 6, 4, [(4, 100)] * 3 + [(6, 104)] * 3, min_count=4)
    # hi: 5 workers of 2 cores, one count seen: 1 / 5 = 20 %; min_count 2, 3 elastic
    _register(client, "hi", 5, 2, [(5, 50)] * 3, min_count=2)
    # flat: no min_count, never resized: it keeps the 3 it registered
    _register(client, "flat", 3, 4, [(3, 30)] * 3)
    # pending pods ask 20 cores, 10 are free: short by 10
    _push_state(client, 1790, free_cpu=10, pending_cpu=20)

    # lo first: ceil(10 / 4) = 3 wanted, 2 elastic (max_return 2): 6 -> 4, 8 cores
    lo = _running(client, "lo", "cluster_shortage")
    assert lo["roles"]["worker"]["count"] == 4
    assert [n["name"] for n in lo["remove"]] == ["lo-edljob-worker-5", "lo-edljob-worker-4"]
    why = next(r for r in lo["reasons"] if r["optimizer"] == "cluster_shortage")
    assert why["evidence"]["marginal_gain"] == 4 / 2 / 104
    assert (why["evidence"]["rank"], why["evidence"]["returned"]) == (1, 2)
    # the plan says which state it used
    used = _cluster_reason(lo)
    assert used["optimizer"] == "guard"
    assert used["evidence"]["cluster_source"] == "volcano"
    assert used["evidence"]["cluster_ts"] == _ts(1790)
    assert used["evidence"]["free"]["cpu"] == 10 and used["evidence"]["pending"]["cpu"] == 20
    assert used["evidence"]["shortfall"] == {"cpu": 10}

    # hi next: 10 - 8 = 2 cores still short, ceil(2 / 2) = 1 worker: 5 -> 4
    hi = _running(client, "hi", "cluster_shortage")
    assert hi["roles"]["worker"]["count"] == 4
    assert [n["name"] for n in hi["remove"]] == ["hi-edljob-worker-4"]
    why = next(r for r in hi["reasons"] if r["optimizer"] == "cluster_shortage")
    assert why["evidence"]["returned_before"] == [
        {"uid": "lo", "marginal_gain": 4 / 2 / 104, "gives": 2}
    ]

    flat = _running(client, "flat", "cluster_shortage")
    assert flat["roles"] == {} and flat["remove"] == []
    assert any("no elastic workers (3 workers, floor 3)" in r["message"] for r in flat["reasons"])


def test_growth_gets_only_the_room_and_a_stale_state_is_not_used(client):
    # worker_tuning adds 2 workers of 4 cores to a 3-worker job without PS (limit 64)
    _register(client, "grow", 3, 4, [(3, 30)] * 3)
    # free 10, pending 4: room 6 cores, one more worker fits, two do not
    _push_state(client, 1790, free_cpu=10, pending_cpu=4)
    plan = _running(client, "grow", "worker_tuning")
    assert plan["roles"]["worker"]["count"] == 4
    cut = next(r for r in plan["reasons"] if r["message"].startswith("worker 3 -> 5 cut to 4"))
    assert cut["evidence"]["room"] == {"cpu": 6}
    assert _cluster_reason(plan)["message"].endswith("not short")

    # a state from 20 minutes before the job's latest sample (BRAIN_CLUSTER_STATE_MAX_AGE_S
    # is 900 s) is not used: nothing bounds the growth, and no plan cites it
    _push_state(client, 1800 - 1200, free_cpu=0, pending_cpu=100)
    stale = _running(client, "grow", "worker_tuning")
    assert stale["roles"]["worker"]["count"] == 5
    assert not [r for r in stale["reasons"] if r["message"].startswith("cluster state")]


def test_without_min_count_workers_above_the_sized_count_are_elastic(session):
    """A job without min_count keeps the count its estimate plan sized it to: the running
    stage's additions above it are elastic; a job only the running stage resized has
    lost its registered count and keeps all it runs."""

    def applied(job, stage: str, workers: int, minutes: int) -> None:
        at = T0 + timedelta(minutes=minutes)
        body = PlanBody(roles={"worker": RoleSpec(count=workers, cpu=4, memory_mib=4096)})
        session.add(
            ScalePlanRow(
                job_id=job.id,
                stage=stage,
                status="applied",
                body=body,
                created_at=at,
                updated_at=at,
                applied_at=at,
            )
        )

    roles = {"worker": RoleSpec(count=6, cpu=4, memory_mib=4096)}
    sized = make_job(session, "sized", start=T0, status="running", roles=roles)
    applied(sized, "estimate", 4, 5)
    applied(sized, "running", 6, 15)
    resized = make_job(session, "resized", start=T0, status="running", roles=roles)
    applied(resized, "running", 6, 15)
    session.flush()

    peers = {p.uid: p for p in elastic_jobs(session, speed_window_s=3600)}
    assert (peers["sized"].workers, peers["sized"].floor, peers["sized"].elastic) == (6, 4, 2)
    assert peers["sized"].changed_at == T0 + timedelta(minutes=15)
    assert (peers["resized"].floor, peers["resized"].elastic) == (6, 0)
    # no speed samples: linear scaling's 1 / 6
    assert (peers["sized"].marginal_gain, peers["sized"].gain_measured) == (1 / 6, False)
