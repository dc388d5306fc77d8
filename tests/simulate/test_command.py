"""`brain simulate` in-process: the API app comes by entry point (brain never imports api)."""

from __future__ import annotations

import json

from api.main import main


def test_simulate_runs_an_in_process_brain(capsys):
    # Two simulated minutes of the all-reduce job: the create plan is applied before start.
    assert main(["simulate", "--scenario", "gpu-allreduce", "--horizon", "120", "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    assert (result["scenario"], result["seed"], result["horizon_s"]) == ("gpu-allreduce", 0, 120)
    assert result["over_limit_seconds"] == 0
