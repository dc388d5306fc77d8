"""`brain simulate` in-process: the API app comes by entry point (brain never imports api)."""

from __future__ import annotations

import json

import pytest

from api.main import main


def test_simulate_runs_an_in_process_brain(capsys):
    # Two simulated minutes of the all-reduce job: the create plan is applied before start.
    assert main(["simulate", "--scenario", "gpu-allreduce", "--horizon", "120", "--json"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    result = json.loads(line)
    assert (result["scenario"], result["seed"], result["horizon_s"]) == ("gpu-allreduce", 0, 120)
    assert result["over_limit_seconds"] == 0


@pytest.mark.parametrize("family", ["measured", "hot-ps", "comm-bound"])
def test_random_jobs_of_a_family_print_its_figures(capsys, family):
    # Two jobs of the family, two simulated minutes each: a row per job and its figures.
    assert main(["simulate", "--random", "2", "--family", family, "--horizon", "120"]) == 0
    out = capsys.readouterr().out
    assert f"{family}-0-0" in out and f"{family}-0-1" in out
    assert f"{family}: 2 random jobs" in out
    assert "reached/best: median" in out
    assert "at 95 % of the best within 3 plans that change counts or CPU" in out
    assert "OOM kills after a size Brain chose" in out
    assert "over_limit_seconds: total 0, in 0 of 2 jobs" in out
    assert "plans_cpu_limit_below_cpu: total" in out


def test_random_jobs_take_the_families_in_turn_with_figures_per_family(capsys):
    assert main(["simulate", "--random", "3", "--seed", "5", "--horizon", "120", "--json"]) == 0
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["scenario"], r["family"]) for r in results] == [
        ("measured-5-0", "measured"),
        ("hot-ps-5-1", "hot-ps"),
        ("comm-bound-5-2", "comm-bound"),
    ]


def test_the_classic_draw_stays_available(capsys):
    assert main(["simulate", "--random", "1", "--family", "classic", "--horizon", "120"]) == 0
    assert "classic: 1 random jobs" in capsys.readouterr().out


def test_ps_busy_judges_the_same_run_against_a_best_whose_ps_keep_headroom(capsys):
    args = ["simulate", "--random", "1", "--family", "hot-ps", "--seed", "1", "--horizon", "120"]
    assert main([*args, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*args, "--json", "--ps-busy", "0.85"]) == 0
    kept = json.loads(capsys.readouterr().out)
    # The same run; its job's PS need 1 / 0.85 of their cores, so its best is lower.
    assert kept["reached_steps_per_sec"] == plain["reached_steps_per_sec"]
    assert kept["best_steps_per_sec"] < plain["best_steps_per_sec"]


@pytest.mark.parametrize("value", ["0", "1.2", "most"])
def test_ps_busy_outside_0_to_1_is_refused_by_name(capsys, value):
    with pytest.raises(SystemExit):
        main(["simulate", "--scenario", "ps-steady", "--ps-busy", value])
    assert "argument --ps-busy" in capsys.readouterr().err


def test_family_needs_random():
    with pytest.raises(SystemExit, match="--family goes with --random"):
        main(["simulate", "--scenario", "ps-steady", "--family", "hot-ps"])


def test_classic_random_jobs_are_drawn_from_the_stated_ranges_and_repeat_with_the_seed():
    from brain.lab.simulation.random_jobs import random_scenarios

    jobs = random_scenarios(200, seed=3)
    assert random_scenarios(5, seed=3) == jobs[:5]  # job i is the same whatever N
    assert random_scenarios(5, seed=4) != jobs[:5]
    ps = [j for j in jobs if j.strategy == "ps"]
    assert 0.5 < len(ps) / len(jobs) < 0.9
    for job in jobs:
        assert 0.03 <= job.throughput.beta <= 0.25
        assert job.limit_cpu is None or 8 <= job.limit_cpu <= 256 or job.strategy != "ps"
        assert 1 <= job.roles["worker"].count <= 8
    for job in ps:
        assert 1 <= job.roles["ps"].count <= 4
        assert 0.01 <= job.throughput.ps_cpu_per_step <= 0.12
    assert any(j.limit_cpu is None for j in jobs)
    assert any(j.memory.ps_mib_per_step > 0 for j in ps)


def test_simulate_prints_only_its_result(tmp_path):
    """As a user runs it: nothing before the result (no library deprecation warning, no
    migration or start-up log lines of the in-process Brain)."""
    import os
    import subprocess
    import sys

    env = {"PATH": os.environ["PATH"], "XDG_DATA_HOME": str(tmp_path)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "api.main",
            "simulate",
            "--scenario",
            "gpu-allreduce",
            "--horizon",
            "120",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("scenario ")
