"""Scenarios run end to end: the simulated master drives the real app through the client."""

from __future__ import annotations

from brain.client import BrainClient
from simulator.run import run_scenario
from simulator.scenarios import SCENARIOS


def test_same_seed_same_figures(client):
    brain = BrainClient(http=client)
    first = run_scenario(brain, SCENARIOS["hot-ps"], seed=3, horizon_s=900)[1]
    second = run_scenario(brain, SCENARIOS["hot-ps"], seed=3, horizon_s=900)[1]
    assert first == second
    assert (first.scenario, first.seed, first.horizon_s) == ("hot-ps", 3, 900)
    assert first.best_steps_per_sec > first.reached_steps_per_sec > 0
