from brain.domain import Resources, Stage
from brain.optimizing import NodeChange
from optimizers.hot_ps import HotPsOptimizer, HotPsSettings
from tests.optimizers.builders import context, node, series

SETTINGS = HotPsSettings()  # hot at >= 80 % in each of the last 3 samples, sized for 60 %
PS = [node(f"ps-{i}", "ps", cpu=8, memory_mib=16384) for i in range(3)]
SAMPLES = [
    # hot: the last three are 7.0, 7.2, 7.6 of 8 cores = 87.5 %, 90 %, 95 %
    *series("ps-0", cpu=[2.0, 7.0, 7.2, 7.6]),
    # one dip to 3.0 (37.5 %) in the last three: not hot
    *series("ps-1", cpu=[7.0, 3.0, 7.5]),
    *series("ps-2", cpu=[2.0, 2.0, 2.0]),
]


def test_hot_ps_among_cold_ones_is_migrated():
    proposal = HotPsOptimizer().propose(context(Stage.running, nodes=PS, samples=SAMPLES), SETTINGS)
    # peak 7.6 / 0.6 = 12.67 -> 12.7 cores; memory unchanged
    assert proposal.migrate == [NodeChange(role="ps", name="ps-0", cpu=12.7, memory_mib=16384)]
    assert proposal.reasons[0].evidence["cpu_used"] == [7.0, 7.2, 7.6]
    assert proposal.reasons[0].threshold["hot_threshold"] == 0.8


def test_hot_ps_capped_at_node_max():
    ctx = context(
        Stage.running, nodes=PS, samples=SAMPLES, node_max=Resources(cpu=10, memory_mib=65536)
    )
    proposal = HotPsOptimizer().propose(ctx, SETTINGS)
    assert [(c.name, c.cpu) for c in proposal.migrate] == [("ps-0", 10)]


def test_hot_ps_already_on_largest_node_is_reported_not_migrated():
    ctx = context(
        Stage.running, nodes=PS, samples=SAMPLES, node_max=Resources(cpu=8, memory_mib=65536)
    )
    proposal = HotPsOptimizer().propose(ctx, SETTINGS)
    assert proposal.is_empty
    assert "cannot grow" in proposal.reasons[0].message


def test_no_hot_ps_is_an_empty_proposal():
    proposal = HotPsOptimizer().propose(
        context(Stage.running, nodes=PS, samples=SAMPLES[4:]), SETTINGS
    )
    assert proposal.is_empty
    assert proposal.reasons[0].evidence["utilization"]["ps-1"] == [0.875, 0.375, 0.938]
