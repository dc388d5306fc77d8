from brain.domain import RoleSpec
from brain.optimizing import NodeChange, Proposal
from brain.optimizing.bounds.one_ps_change import one_ps_change
from tests.builders.bounds import view
from tests.builders.views import job, node

NODES = [node(f"ps-{i}", "ps", 8, 8192, index=i) for i in range(2)]
MORE_CPU = NodeChange(role="ps", name="ps-0", cpu=13.4, memory_mib=8192)
MORE_MEMORY = NodeChange(role="ps", name="ps-1", cpu=8, memory_mib=12000)


def test_adding_ps_drops_a_ps_move_to_more_cpu_but_not_a_memory_fix():
    proposal = Proposal(roles={"ps": RoleSpec(count=3)}, migrate=[MORE_CPU, MORE_MEMORY])
    bounded, reasons = one_ps_change(proposal, view(job(), NODES))
    assert bounded.migrate == [MORE_MEMORY]
    assert reasons[0].evidence == {"node": "ps-0", "ps_count": 2, "ps_planned": 3}


def test_without_more_ps_every_migration_stays():
    proposal = Proposal(roles={"ps": RoleSpec(count=2)}, migrate=[MORE_CPU])
    assert one_ps_change(proposal, view(job(), NODES)) == (proposal, [])
