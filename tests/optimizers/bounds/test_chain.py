"""The chain's order is part of what a plan says; each step sees what the ones before
left, and the reasons come in step order."""

from brain.domain import Limits, RoleSpec
from brain.optimizing import Proposal, Reason
from brain.optimizing.bounds import CHAIN, run_chain
from tests.builders.bounds import view
from tests.builders.views import job


def test_the_steps_run_in_this_order():
    assert [step.__name__ for step in CHAIN] == [
        "cpu_budget",
        "known_roles",
        "role_sizes",
        "role_counts",
        "change_factor",
        "shard_memory",
        "largest_node",
        "worker_count",
        "size_cuts",
        "launch_sizes",
        "node_list_counts",
        "migration_sizes",
        "migration_change_factor",
        "one_ps_change",
        "elastic_workers",
        "node_changes",
        "cluster_room",
        "replacements",
        "named_removals",
        "cpu_limits",
    ]


def test_reasons_follow_the_proposals_own_in_step_order_and_the_input_is_kept():
    roles = {"chief": RoleSpec(count=1, cpu=4), "worker": RoleSpec(count=1, cpu=4)}
    proposal = Proposal(
        roles={"worker": RoleSpec(count=8, cpu=40)}, reasons=[Reason("worker_tuning", "more")]
    )
    # cpu 40 is capped at 16 by the node sizes; 4 + 8 x 16 = 132 > 40 cores: the worker
    # count goes to 2 (4 + 32 = 36)
    bounded = run_chain(proposal, view(job(roles=roles, limits=Limits(cpu=40))))
    assert bounded.roles == {"worker": RoleSpec(count=2, cpu=16)}
    assert [r.message for r in bounded.reasons] == [
        "more",
        "capped worker.cpu from 40 to the largest node's 16",
        "reduced workers from 8 to 2 to fit the job's limits",
    ]
    assert proposal.roles == {"worker": RoleSpec(count=8, cpu=40)} and len(proposal.reasons) == 1


def test_a_chain_of_no_steps_changes_nothing():
    proposal = Proposal(roles={"worker": RoleSpec(count=-3)})
    assert run_chain(proposal, view(), chain=()) == proposal
