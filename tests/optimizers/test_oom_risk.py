from brain.domain import Resources, Stage
from brain.optimizing import NodeChange
from optimizers.oom_risk import OomRiskOptimizer, OomRiskSettings
from tests.optimizers.builders import context, node, series

SETTINGS = OomRiskSettings()  # risk at 90 %, horizon 600 s, margin 1.2
WORKER = node("worker-0", "worker", cpu=4, memory_mib=10000)
HEALTHY = node("worker-1", "worker", cpu=4, memory_mib=10000)
HEALTHY_SAMPLES = series("worker-1", memory_mib=[5000, 5000, 5000])


def risk(samples, settings=SETTINGS, node_max=None):
    kwargs = {"node_max": node_max} if node_max else {}
    ctx = context(
        Stage.running, nodes=[WORKER, HEALTHY], samples=[*samples, *HEALTHY_SAMPLES], **kwargs
    )
    return OomRiskOptimizer().propose(ctx, settings)


def test_risk_by_threshold():
    proposal = risk(series("worker-0", memory_mib=[9200, 9200, 9200]))
    # 9200 >= 0.9 x 10000; flat, so size = 1.2 x max(request 10000, used 9200) = 12000
    assert proposal.migrate == [NodeChange(role="worker", name="worker-0", cpu=4, memory_mib=12000)]
    assert "risk threshold" in proposal.reasons[0].message


def test_risk_by_trend_within_horizon():
    # +1000 MiB a minute: 8000 now (< 9000, under the threshold) and 18000 in 600 s
    samples = series("worker-0", memory_mib=[6000, 7000, 8000])
    proposal = risk(samples)
    assert [(c.name, c.memory_mib) for c in proposal.migrate] == [
        ("worker-0", 21600)
    ]  # 18000 x 1.2
    assert proposal.reasons[0].evidence["predicted_mib"] == 18000
    # within a 60 s horizon it only reaches 9000 < 10000: no risk
    assert risk(samples, OomRiskSettings(horizon_s=60)).is_empty


def test_risk_capped_at_node_max():
    proposal = risk(
        series("worker-0", memory_mib=[6000, 7000, 8000]), node_max=Resources(memory_mib=16000)
    )
    assert proposal.migrate[0].memory_mib == 16000


def test_healthy_nodes_are_an_empty_proposal():
    proposal = risk(series("worker-0", memory_mib=[8000, 7000, 6000]))
    assert proposal.is_empty
    assert proposal.reasons[0].threshold["risk_threshold"] == 0.9
