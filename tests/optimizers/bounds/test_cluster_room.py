from datetime import timedelta

from brain.domain import ClusterState, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.cluster_room import cluster_room
from brain.optimizing.cluster import ClusterView
from tests.builders.bounds import view
from tests.builders.views import NOW, job

ROLES = {"worker": RoleSpec(count=2, cpu=4, memory_mib=8192), "ps": RoleSpec(count=1, cpu=8)}


def cluster(free_cpu: float, pending_cpu: float = 0) -> ClusterView:
    return ClusterView(
        ClusterState(
            source="volcano",
            ts=NOW - timedelta(minutes=1),
            nodes=3,
            free_cpu=free_cpu,
            pending_cpu=pending_cpu,
        )
    )


def test_workers_are_cut_first_then_other_roles_then_launches():
    # room 20 - 6 = 14 cores; workers 2 -> 5 (+12) and PS 1 -> 2 (+8) need 20: workers
    # give up first, down to 3 (+4, with the PS' 8: 12); the 2 cores left do not take a
    # 4-core launch
    proposal = Proposal(
        roles={"worker": RoleSpec(count=5), "ps": RoleSpec(count=2)},
        launch=[NodeChange(role="worker", cpu=4)],
        ps_hosts=["ps-0", "ps-1"],
    )
    bounded, reasons = cluster_room(proposal, view(job(roles=ROLES), cluster=cluster(20, 6)))
    assert bounded.roles == {"worker": RoleSpec(count=3), "ps": RoleSpec(count=2)}
    assert bounded.launch == []
    assert bounded.ps_hosts == ["ps-0", "ps-1"]  # the PS count stands: its hosts too
    assert [r.evidence.get("granted") for r in reasons] == [None, 3, None]
    assert reasons[-1].evidence == {
        "need": {"cpu": 4, "memory_mib": 0.0, "gpu": 0.0},
        "room": {"cpu": 2},
    }


def test_a_cut_ps_count_drops_the_hosts_named_for_it():
    proposal = Proposal(roles={"ps": RoleSpec(count=3)}, ps_hosts=["a", "b", "c"])
    bounded, _ = cluster_room(proposal, view(job(roles=ROLES), cluster=cluster(8)))
    # room 8: one more 8-core PS, not two
    assert bounded.roles == {"ps": RoleSpec(count=2)}
    assert bounded.ps_hosts == []


def test_without_a_cluster_state_nothing_is_bounded():
    proposal = Proposal(roles={"worker": RoleSpec(count=50)})
    assert cluster_room(proposal, view(job(roles=ROLES))) == (proposal, [])


def test_a_ps_count_cut_by_the_room_shares_the_memory_sized_for_the_count_asked():
    # 1 -> 3 PS sized at 2000 MiB each (6000 for the tier); room for one more 8-core PS:
    # 2 PS, each holding half: 3000 MiB
    proposal = Proposal(roles={"ps": RoleSpec(count=3, memory_mib=2000)})
    bounded, reasons = cluster_room(proposal, view(job(roles=ROLES), cluster=cluster(8)))
    assert bounded.roles == {"ps": RoleSpec(count=2, memory_mib=3000)}
    assert reasons[-1].evidence["share_mib"] == 3000
