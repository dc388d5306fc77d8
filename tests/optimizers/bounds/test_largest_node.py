from brain.domain import RoleSpec
from brain.optimizing import Proposal
from brain.optimizing.bounds.largest_node import largest_node
from tests.builders.bounds import view
from tests.builders.views import job


def test_a_role_registered_above_the_largest_node_is_cut_to_it():
    # registered at 24 cores, limit 30, 70000 MiB; the largest node: 16 cores, 65536 MiB
    roles = {"worker": RoleSpec(count=2, cpu=24, cpu_limit=30, memory_mib=70000)}
    bounded, reasons = largest_node(Proposal(), view(job(roles=roles)))
    assert bounded.roles == {"worker": RoleSpec(cpu=16, memory_mib=65536, cpu_limit=16)}
    assert reasons[0].message == (
        "cut worker to the largest node: cpu 24 -> 16, memory_mib 70000 -> 65536, "
        "cpu_limit 30 -> 16"
    )


def test_a_role_without_nodes_is_left_alone():
    roles = {"evaluator": RoleSpec(count=0, cpu=24)}
    assert largest_node(Proposal(), view(job(roles=roles))) == (Proposal(), [])
