"""min_count / max_count: the guard keeps every plan within a role's declared node counts,
gives elastic workers up first and adds them last, and names the nodes a role gives up."""

from brain.domain import Limits, Resources, RoleBounds, RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds import enforce_bounds
from tests.builders.views import job, node

NODE_MAX = Resources(cpu=16, memory_mib=65536, gpu=8)
# chief 4 + 5 workers x 4 + 2 PS x 8 = 40 cores
ROLES = {
    "chief": RoleSpec(count=1, cpu=4, memory_mib=8192),
    "worker": RoleSpec(count=5, cpu=4, memory_mib=8192),
    "ps": RoleSpec(count=2, cpu=8, memory_mib=8192),
}
NODES = [
    node("chief-0", "chief", cpu=4, memory_mib=8192),
    *(node(f"worker-{i}", "worker", cpu=4, memory_mib=8192, index=i) for i in range(5)),
    *(node(f"ps-{i}", "ps", cpu=8, memory_mib=8192, index=i) for i in range(2)),
]


def bounded(proposal, limits=None, nodes=NODES, **bounds):
    the_job = job(roles=ROLES, limits=limits or Limits(), bounds=bounds)
    return enforce_bounds(proposal, the_job, nodes, NODE_MAX)


def test_a_count_above_max_count_is_clipped_and_says_so():
    plan = bounded(Proposal(roles={"worker": RoleSpec(count=9)}), worker=RoleBounds(2, 6))
    assert plan.roles == {"worker": RoleSpec(count=6)}
    clip = plan.reasons[0]
    assert clip.message == "clipped worker.count from 9 to 6: the job's max_count is 6"
    assert clip.threshold == {"min_count": 2, "max_count": 6}
    assert clip.evidence == {"role": "worker", "count": 9, "current_count": 5}


def test_a_count_clipped_back_to_the_current_one_is_no_change():
    # min_count 5 and 5 running: a take-back to 3 becomes nothing to do
    plan = bounded(Proposal(roles={"worker": RoleSpec(count=3)}), worker=RoleBounds(min_count=5))
    assert plan.is_empty
    assert plan.reasons[0].message == (
        "clipped worker.count from 3 to 5: the job's min_count is 5 and worker already runs 5"
    )


def test_fitting_the_limits_never_goes_below_min_count():
    grow_ps = Proposal(roles={"ps": RoleSpec(cpu=12)})
    # 4 + 5 x 4 + 2 x 12 = 48 > 40: without bounds 3 workers fit (4 + 12 + 24 = 40)
    assert bounded(grow_ps, Limits(cpu=40)).roles["worker"].count == 3
    # min_count 4: 4 workers (4 + 16 + 24 = 44), and the PS growth is cut by the 4
    # cores over: 2 x (12 - 8) = 8 added, half kept -> 10 cores each (4 + 16 + 20 = 40)
    plan = bounded(grow_ps, Limits(cpu=40), worker=RoleBounds(min_count=4))
    assert plan.roles["worker"].count == 4
    assert plan.roles["ps"].cpu == 10
    assert plan.reasons[0].threshold == {"cpu": 40, "min_count": 4}
    assert plan.reasons[1].message == (
        "cut the plan's growth of cpu to fit the job's cpu limit 40 cores: ps 8 -> 12 cut to 10"
    )


def test_elastic_workers_make_room_for_a_migration():
    # 40 cores now, limit 48: +2 workers (8 cores) and ps-0 8 -> 12 cores (4) need 52
    proposal = Proposal(
        roles={"worker": RoleSpec(count=7)},
        migrate=[NodeChange(role="ps", name="ps-0", cpu=12, memory_mib=8192)],
    )
    plan = bounded(proposal, Limits(cpu=48), worker=RoleBounds(min_count=5))
    # 6 workers: 44 cores, and the migration's +4 fits exactly
    assert plan.roles == {"worker": RoleSpec(count=6)}
    assert plan.migrate == [NodeChange(role="ps", name="ps-0", cpu=12, memory_mib=8192)]
    assert plan.reasons[0].message.startswith("gave up 1 elastic worker(s) (7 -> 6)")


def test_a_shrinking_role_names_its_highest_indices_for_removal():
    plan = bounded(Proposal(roles={"worker": RoleSpec(count=3)}), worker=RoleBounds(2, 8))
    assert plan.remove == [
        NodeChange(role="worker", name="worker-4"),
        NodeChange(role="worker", name="worker-3"),
    ]
    assert plan.reasons[0].message == (
        "worker goes from 5 to 3 nodes: removes worker-4, worker-3 "
        "(highest index first: the elastic ones)"
    )


def test_launches_and_removals_stay_within_the_bounds():
    # 2 PS, max_count 3: of two launches the second is dropped
    ps = NodeChange(role="ps", cpu=8, memory_mib=8192)
    launches = Proposal(launch=[ps, ps])
    plan = bounded(launches, ps=RoleBounds(max_count=3))
    assert plan.launch == [ps]
    assert plan.reasons[0].message == (
        "dropped 1 launch(s) of ps: 2 -> 4 nodes would leave its bounds, 3 allowed"
    )
    # 5 workers, min_count 4: of two removals one stays
    removals = Proposal(
        remove=[
            NodeChange(role="worker", name="worker-4"),
            NodeChange(role="worker", name="worker-3"),
        ]
    )
    plan = bounded(removals, worker=RoleBounds(min_count=4))
    assert plan.remove == [NodeChange(role="worker", name="worker-4")]
