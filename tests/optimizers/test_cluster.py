"""Cluster-aware scaling, pure parts: the cluster view (room, shortfall), a job's
marginal gain, the guard's growth bound, and ``cluster_shortage``'s ranking; every
number worked by hand in the comments."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brain.domain import ClusterState, PlanStatus, Resources, RoleSpec, Stage
from brain.optimizing import NodeChange, OptimizerContext, PlanView, Proposal
from brain.optimizing.bounds import enforce_bounds
from brain.optimizing.cluster import ClusterView, ElasticJob, marginal_gain
from optimizers.cluster_shortage import ClusterShortageOptimizer, ClusterShortageSettings
from tests.builders.views import NOW, job, speeds

NODE_MAX = Resources(cpu=64, memory_mib=524288, gpu=8)
WORKER = RoleSpec(count=4, cpu=4, memory_mib=8192)


def state(**amounts) -> ClusterState:
    return ClusterState(source="volcano", ts=NOW - timedelta(minutes=1), nodes=10, **amounts)


# --- the view ---------------------------------------------------------------------------


def test_room_and_shortfall_per_resource():
    view = ClusterView(
        state(free_cpu=12, pending_cpu=18, free_memory_mib=65536, pending_memory_mib=32768)
    )
    # cpu 12 - 18 = -6; memory 65536 - 32768; GPUs unknown: neither room nor shortfall
    assert view.room() == {"cpu": -6, "memory_mib": 32768}
    assert view.shortfall() == {"cpu": 6}
    # a margin of 8 cores: 6 beyond the free ones is not short yet
    assert ClusterView(view.state, Resources(cpu=8)).shortfall() == {}
    # unknown pending demand counts as none for the room, and is never a shortfall
    only_free = ClusterView(state(free_cpu=3))
    assert (only_free.room(), only_free.shortfall()) == ({"cpu": 3}, {})


def test_marginal_gain_measured_across_the_last_two_worker_counts():
    # 4 workers at 100 steps/s, then 6 at 110: (110 - 100) / 2 / 110 = 0.04545
    gain, measured = marginal_gain(speeds([(4, 100), (4, 100), (6, 110), (6, 110)]), 6)
    assert (gain, measured) == (pytest.approx(10 / 2 / 110), True)
    # the added workers slowed it down: negative, ranks first
    assert marginal_gain(speeds([(4, 100), (6, 90)]), 6)[0] == pytest.approx(-10 / 2 / 90)
    # one worker count only: linear scaling's 1 / 5
    assert marginal_gain(speeds([(5, 100), (5, 101)]), 5) == (0.2, False)
    assert marginal_gain([], 4) == (0.25, False)


# --- the guard --------------------------------------------------------------------------


def _bounded(proposal: Proposal, cluster: ClusterView | None, roles=None, nodes=()):
    return enforce_bounds(
        proposal, job(roles=roles or {"worker": WORKER}), list(nodes), NODE_MAX, cluster
    )


def test_growth_is_cut_to_the_room_free_minus_pending():
    # free 12 cores, 6 pending: room 6; 2 more 4-core workers need 8, 1 needs 4: 4 -> 5
    cluster = ClusterView(state(free_cpu=12, pending_cpu=6, free_memory_mib=65536))
    bounded = _bounded(Proposal(roles={"worker": RoleSpec(count=6)}), cluster)
    assert bounded.roles == {"worker": RoleSpec(count=5)}
    used, cut = bounded.reasons
    assert used.optimizer == cut.optimizer == "guard"
    assert used.message == (
        "cluster state from volcano at 2024-05-01T11:59:00Z: free 12 cores, 65536 MiB, ? GPUs; "
        "pending 6 cores, ? MiB, ? GPUs; not short"
    )
    assert used.evidence["cluster_ts"] == "2024-05-01T11:59:00Z"
    assert used.evidence["free"] == {"cpu": 12, "memory_mib": 65536, "gpu": None}
    assert cut.message == (
        "worker 4 -> 6 cut to 5: 2 more need 8 cores, 16384 MiB, 0 GPUs, the cluster has room "
        "for 6 cores, 65536 MiB (free minus pending demand)"
    )


def test_a_short_cluster_stops_growth_and_the_empty_role_is_dropped():
    # pending 18 > free 12: room -6, no worker fits; the plan changes nothing
    cluster = ClusterView(state(free_cpu=12, pending_cpu=18))
    bounded = _bounded(Proposal(roles={"worker": RoleSpec(count=6)}), cluster)
    assert bounded.roles == {} and bounded.is_empty
    assert bounded.reasons[0].message.endswith("short by 6 cores")
    assert bounded.reasons[0].evidence["shortfall"] == {"cpu": 6}
    # sizes stay: a resize (oom fix) or a shrink is not growth
    resized = _bounded(Proposal(roles={"worker": RoleSpec(count=6, memory_mib=16384)}), cluster)
    assert resized.roles == {"worker": RoleSpec(memory_mib=16384)}
    assert _bounded(Proposal(roles={"worker": RoleSpec(count=3)}), cluster).roles == {
        "worker": RoleSpec(count=3)
    }


def test_launches_get_what_the_role_growth_left():
    # room 10 cores: the worker (4) fits, then the first 4-core PS (10 - 4 = 6 left), not
    # the second (2 left)
    cluster = ClusterView(state(free_cpu=10))
    roles = {"worker": WORKER, "ps": RoleSpec(count=1, cpu=4, memory_mib=4096)}
    ps = NodeChange(role="ps", cpu=4, memory_mib=4096)
    bounded = _bounded(
        Proposal(roles={"worker": RoleSpec(count=5)}, launch=[ps, ps, ps]), cluster, roles
    )
    assert bounded.roles == {"worker": RoleSpec(count=5)}
    assert bounded.launch == [ps]
    assert [r.message for r in bounded.reasons[1:]] == [
        "dropped the launch of a ps: it needs 4 cores, 4096 MiB, 0 GPUs, the cluster has room "
        "for 2 cores",
        "dropped the launch of a ps: it needs 4 cores, 4096 MiB, 0 GPUs, the cluster has room "
        "for 2 cores",
    ]


def test_a_ps_added_beyond_the_room_is_cut_and_its_hosts_with_it():
    # one more 8-core PS, 6 cores of room: the PS count stays, and the hosts named for
    # two PS go (the store names the hosts of the count that stands)
    cluster = ClusterView(state(free_cpu=6))
    roles = {"worker": WORKER, "ps": RoleSpec(count=1, cpu=8, memory_mib=4096)}
    proposal = Proposal(roles={"ps": RoleSpec(count=2)}, ps_hosts=["ps-0:2222", "ps-1:2222"])
    bounded = _bounded(proposal, cluster, roles)
    assert (bounded.roles, bounded.ps_hosts) == ({}, [])
    assert bounded.reasons[1].message.startswith("ps 1 -> 2 cut to 1: 1 more need 8 cores")
    # with room for it, the hosts stay
    roomy = _bounded(proposal, ClusterView(state(free_cpu=8)), roles)
    assert roomy.ps_hosts == ["ps-0:2222", "ps-1:2222"]


def test_without_a_cluster_state_nothing_is_bounded_or_said():
    bounded = _bounded(Proposal(roles={"worker": RoleSpec(count=9)}), None)
    assert bounded.roles == {"worker": RoleSpec(count=9)} and bounded.reasons == []


# --- cluster_shortage -------------------------------------------------------------------


def peer(uid, workers, floor, gain, cpu=4.0, gpu=0.0, changed_min_ago=None) -> ElasticJob:
    return ElasticJob(
        uid=uid,
        workers=workers,
        floor=floor,
        worker=Resources(cpu=cpu, memory_mib=8192, gpu=gpu),
        marginal_gain=gain,
        gain_measured=True,
        changed_at=None if changed_min_ago is None else NOW - timedelta(minutes=changed_min_ago),
    )


PEERS = (
    peer("a", 6, 4, 0.02),  # 2 elastic 4-core workers
    peer("b", 5, 2, 0.05, cpu=2),  # this job: 3 elastic 2-core workers
    peer("c", 8, 8, 0.001),  # lowest gain, but nothing above its floor
    peer("d", 3, 1, 0.01, changed_min_ago=5),  # changed 5 min ago: cooling down
)


def _propose(cluster, uid="b", plans=(), **settings) -> Proposal:
    context = OptimizerContext(
        stage=Stage.running,
        now=NOW,
        job=job(uid=uid, roles={"worker": RoleSpec(count=5, cpu=2, memory_mib=8192)}),
        plans=plans,
        cluster=cluster,
    )
    return ClusterShortageOptimizer().propose(
        context, ClusterShortageSettings.model_validate(settings)
    )


def short_by(cpu=0.0, gpu=None, peers=PEERS) -> ClusterView:
    gpus = {} if gpu is None else {"free_gpu": 0.0, "pending_gpu": gpu}
    return ClusterView(state(free_cpu=10, pending_cpu=10 + cpu, **gpus), peers=peers)


def test_the_lowest_gain_covers_a_small_shortfall_alone():
    # short 6 cores; ranked a (0.02), b (0.05) (c has none elastic, d cools down):
    # a gives ceil(6 / 4) = 2 workers, covering it; b keeps its workers
    proposal = _propose(short_by(cpu=6))
    assert proposal.is_empty
    (why,) = proposal.reasons
    assert why.evidence["returned_before"] == [{"uid": "a", "marginal_gain": 0.02, "gives": 2}]
    assert "covered by 1 job(s)" in why.message


def test_the_next_job_gives_what_is_still_short_up_to_max_return():
    # short 14: a gives 2 x 4 = 8, 6 remain; b needs ceil(6 / 2) = 3, max_return 2: 5 -> 3
    proposal = _propose(short_by(cpu=14))
    assert proposal.roles == {"worker": RoleSpec(count=3)}
    (why,) = proposal.reasons
    assert why.evidence["rank"] == 2 and why.evidence["returned"] == 2
    assert why.message == (
        "the cluster is short by 14 cores: this job's last worker brings 5.0% of its speed "
        "(measured across its last two worker counts), rank 2 of 2 elastic jobs, lowest "
        "first: workers 5 -> 3 (floor 2)"
    )
    # max_return 3: all 3 elastic workers (5 -> 2, its floor)
    assert _propose(short_by(cpu=14), max_return=3).roles == {"worker": RoleSpec(count=2)}


def test_a_peer_no_longer_cooling_gives_first():
    # d out of its cooldown (0.01, lowest): d 2 x 4 = 8 of 14, a 2 x 4 covers the rest
    peers = (*PEERS[:3], peer("d", 3, 1, 0.01, changed_min_ago=11))
    proposal = _propose(short_by(cpu=14, peers=peers))
    assert proposal.is_empty
    assert [p["uid"] for p in proposal.reasons[0].evidence["returned_before"]] == ["d", "a"]


def test_only_workers_holding_the_short_resource_count():
    # 2 GPUs short: a's CPU-only workers free none; b's 1-GPU workers give 2
    peers = (peer("a", 6, 4, 0.02), peer("b", 5, 2, 0.05, cpu=2, gpu=1))
    proposal = _propose(short_by(gpu=2, peers=peers))
    assert proposal.roles == {"worker": RoleSpec(count=3)}
    assert proposal.reasons[0].evidence["shortfall"] == {"gpu": 2}


def test_nothing_to_give_when_not_short_not_elastic_cooling_or_without_state():
    assert "no fresh cluster state" in _propose(None).reasons[0].message
    assert "not short" in _propose(short_by(cpu=0)).reasons[0].message
    not_elastic = _propose(short_by(cpu=6), uid="c").reasons[0].message
    assert not_elastic == (
        "the cluster is short, but this job has no elastic workers (8 workers, floor 8)"
    )
    changed = PlanView(
        id=1,
        stage=Stage.running,
        status=PlanStatus.applied,
        created_at=NOW - timedelta(minutes=6),
        roles={"worker": RoleSpec(count=5)},
        applied_at=NOW - timedelta(minutes=5),
    )
    cooling = _propose(short_by(cpu=14), plans=(changed,))
    assert cooling.is_empty and "cooling down for 600 s" in cooling.reasons[0].message
