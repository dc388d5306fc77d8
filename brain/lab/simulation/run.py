"""Run a scenario against a Brain reached through a client."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from brain.client import BrainClient
from brain.lab.simulation.master import JobMaster, Run
from brain.lab.simulation.metrics import ScenarioResult, measure
from brain.lab.simulation.scenarios import Scenario

# Simulated time runs in the past, ending this long before the wall clock, so no
# timestamp is ever in Brain's future.
END_MARGIN_S = 300


def run_scenario(
    client: BrainClient,
    scenario: Scenario,
    seed: int,
    horizon_s: float | None = None,
    ps_busy: float = 1.0,
) -> tuple[Run, ScenarioResult]:
    """Run ``scenario`` and measure it against the best whose PS use at most ``ps_busy``
    of their CPU."""
    horizon = scenario.horizon_s if horizon_s is None else horizon_s
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    start = now - timedelta(seconds=horizon + END_MARGIN_S)
    uid = f"sim-{scenario.name}-{seed}-{secrets.token_hex(3)}"
    run = JobMaster(client, scenario, seed, start, uid).simulate(horizon)
    return run, measure(run, horizon, ps_busy)
