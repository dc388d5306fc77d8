from datetime import timedelta

from brain.domain import Resources, Stage
from brain.optimizing import NodeChange
from optimizers.oom_risk import OomRiskOptimizer, OomRiskSettings
from tests.builders.views import NOW, context, node, plan, series

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


def test_the_trend_runs_from_the_last_sample_not_the_wall_clock():
    # Samples ending 2 hours before `now`: extrapolating from now predicted 8000 + 1000 x
    # (7200 + 600) / 60 = 138,000 MiB; from the last sample it is 18000 (+1000 a minute).
    samples = series("worker-0", memory_mib=[6000, 7000, 8000])
    ctx = context(
        Stage.running,
        now=NOW + timedelta(hours=2),
        nodes=[WORKER, HEALTHY],
        samples=[*samples, *HEALTHY_SAMPLES],
    )
    proposal = OomRiskOptimizer().propose(ctx, SETTINGS)
    assert proposal.reasons[0].evidence["predicted_mib"] == 18000


def test_a_migrated_node_cools_down_from_its_applied_time():
    moved = plan(seconds_ago=120, migrate=(NodeChange(role="worker", name="worker-0"),))
    ctx = context(
        Stage.running,
        nodes=[WORKER, HEALTHY],
        samples=[*series("worker-0", memory_mib=[9200] * 3), *HEALTHY_SAMPLES],
        plans=[moved],
    )
    proposal = OomRiskOptimizer().propose(ctx, SETTINGS)
    assert proposal.migrate == []
    assert "cooling down for 600 s" in proposal.reasons[0].message


def test_a_flat_window_is_no_rising_trend():
    # 0, 698, 0 MiB at -600, -300, 0 s: slope exactly 0, so no trend prediction; the
    # latest use (0) is far below 90 % of 200 MiB: nothing to do. A rounding slope of
    # 1e-17 once predicted the mean, 232.7 MiB >= 200, and migrated an idle node.
    idle = node("worker-0", "worker", cpu=4, memory_mib=200)
    ctx = context(Stage.running, nodes=[idle], samples=series("worker-0", memory_mib=[0, 698, 0]))
    assert OomRiskOptimizer().propose(ctx, SETTINGS).migrate == []


def test_growth_that_sped_up_counts_at_its_recent_rate():
    # Flat at 7000 MiB for 5 minutes (a stall), then +300 MiB a minute up to 8500 now
    # (< 9000, under the threshold). Over the whole window the fit rises 2.5 MiB/s and
    # predicts 9659 MiB in 600 s, under the 10000 request: no risk, and the node was
    # killed before the next look. Over the last 300 s it rises 5 MiB/s: 8500 + 3000 =
    # 11500 MiB in 600 s, so it moves now, to 11500 x 1.2 = 13800 MiB.
    samples = series("worker-0", memory_mib=[7000] * 6 + [7300, 7600, 7900, 8200, 8500])
    proposal = risk(samples)
    assert [(c.name, c.memory_mib) for c in proposal.migrate] == [("worker-0", 13800)]
    assert proposal.reasons[0].evidence["predicted_mib"] == 11500
    # the window's fit alone (recent_trend_s 0) sees no risk
    assert risk(samples, OomRiskSettings(recent_trend_s=0)).migrate == []
