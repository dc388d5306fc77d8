"""The recommenders a replay through the loop compares, and their knob sweeps.

Standard: ``request``, ``max_last7_x1.15``, ``p90_last7_x1.15``, ``vpa_like_x1.15``,
``autopilot_like_w24h_x1.15`` and ``brain`` (the default pipeline as configured).
Sweeps, for tuning and the curves: the one-shot rules' and VPA's margin, the moving
window's length and margin, and Brain's ``learned_margin`` safety, then at safety 0.6
``memory_release`` from its defaults to ever quicker settings, so that Brain's curve
reaches the OOM rates of the moving window and VPA.
"""

from __future__ import annotations

from brain.config import Settings
from brain.lab.backtest.baselines import LastRunsRule
from brain.lab.backtest.lineup import RULE_MARGINS
from brain.lab.backtest.loop.baselines import AutopilotLoop, OneShotLoop, RequestLoop, VpaLoop
from brain.optimizing import OptimizerRegistry
from brain.replay.brain_policy import BrainLoop

VPA_MARGINS = (1.0, 1.15, 1.3, 1.5, 2.0)
WINDOW_HOURS = (1.0, 6.0, 24.0)
WINDOW_MARGINS = (1.0, 1.15, 1.3, 1.5, 2.0)
SAFETIES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0)
# memory_release settings from slow (its defaults) to quick: more memory given back,
# more OOM kills.
RELEASES = (
    {"hold_s": 43200.0, "margin": 4.0, "below_share": 0.5},
    {"hold_s": 21600.0, "margin": 2.0, "below_share": 0.6},
    {"hold_s": 21600.0, "margin": 1.5, "below_share": 0.6},
    {"hold_s": 10800.0, "margin": 1.5, "below_share": 0.6},
    {"hold_s": 3600.0, "margin": 1.2, "below_share": 0.8},
)


def standard(
    registry: OptimizerRegistry, settings: Settings, *, k: int = 7, margin: float = 1.15
) -> list:
    return [
        RequestLoop(),
        OneShotLoop(LastRunsRule("max", k, margin)),
        OneShotLoop(LastRunsRule("p90", k, margin)),
        VpaLoop(margin),
        AutopilotLoop(24.0, margin),
        BrainLoop(registry, settings),
    ]


def sweeps(registry: OptimizerRegistry, settings: Settings, *, k: int = 7) -> list:
    """Every knob value of every family (the standard members included)."""
    found: list = []
    for statistic in ("max", "p90"):
        found += [OneShotLoop(LastRunsRule(statistic, k, m)) for m in RULE_MARGINS]
    found += [VpaLoop(m) for m in VPA_MARGINS]
    found += [AutopilotLoop(w, m) for w in WINDOW_HOURS for m in WINDOW_MARGINS]
    found += [BrainLoop(registry, settings, s) for s in SAFETIES]
    found += [BrainLoop(registry, settings, 0.6, r) for r in RELEASES]
    return found
