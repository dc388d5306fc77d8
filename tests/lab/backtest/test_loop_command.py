"""``brain backtest --replay`` end to end on small run and series files."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.commands import run_command

DAY0 = 1704067200  # 2024-01-01T00:00:00Z


@pytest.fixture
def files(tmp_path):
    """Workload ``a``: 4 daily runs asking 4096 MiB and 2 cores, 12 samples each (1 h),
    using 1024 MiB and 0.5 cores throughout, except run 4's 7th sample: 5120 MiB."""
    runs = ["workload,day,samples,req_cpu,req_memory_mib,cpu_mean,cpu_p95,cpu_max,mem_mean,mem_max"]
    series = ["workload,ts,cpu,mem_mib"]
    for d in range(4):
        peak = 5120 if d == 3 else 1024
        runs.append(f"a,2024-01-0{d + 1},12,2,4096,0.5,0.5,0.5,1024,{peak}")
        for i in range(12):
            mem = 5120 if (d == 3 and i == 6) else 1024
            series.append(f"a,{DAY0 + d * 86400 + 300 * (i + 1)},0.5,{mem}")
    trace = tmp_path / "runs.csv"
    trace.write_text("\n".join(runs) + "\n")
    samples = tmp_path / "series.csv.gz"
    with gzip.open(samples, "wt") as out:
        out.write("\n".join(series) + "\n")
    return trace, samples


def test_the_replay_reports_time_integrated_figures_per_recommender(files, capsys):
    trace, series = files
    argv = ["--replay", "--trace", str(trace), "--series", str(series), "--json", "--quiet"]
    assert run_command("backtest", argv) == 0
    out, err = capsys.readouterr()
    assert err == ""
    body = json.loads(out)
    rows = {r["name"]: r for r in body["recommenders"]}
    assert list(rows) == [
        "request",
        "max_last7_x1.15",
        "p90_last7_x1.15",
        "vpa_like_x1.15",
        "autopilot_like_w24h_x1.15",
        "brain",
    ]
    request = rows["request"]
    # 4 runs x 12 samples of 5 min = 4 h at 4 GiB and 2 cores; 5120 > 4096 MiB once: one
    # kill at 35 min into run 4 (checkpoint at 30 min: 5 min lost).
    assert request["run_hours"] == pytest.approx(4.0)
    assert request["ooms"] == 1 and request["runs_with_oom"] == 1
    assert request["ooms_per_1000h"] == pytest.approx(250.0)
    assert request["lost_h"] == pytest.approx(5 / 60)
    assert request["memory_request_gib_h"] == pytest.approx(16.0)
    assert request["memory_gib_h"] == pytest.approx(16.0 + 4 * 5 / 60)  # the re-run
    # Used: 47 samples at 1 GiB and one at 5 GiB, 1/12 h each.
    assert request["memory_used_gib_h"] == pytest.approx((47 + 5) / 12)
    assert request["core_h"] == pytest.approx(8.0 + 2 * 5 / 60)
    assert request["throttled_share"] == 0.0
    # One-shot max of the last runs x 1.15: run 1 at its request, runs 2-4 at 1177.6 MiB
    # (1024 x 1.15); run 4 is killed at its 7th sample and restarts at its request
    # (4096) for its last 25 minutes, plus the 5 lost minutes re-run at 4096 MiB.
    shot = rows["max_last7_x1.15"]
    expected_mib_h = 4096 * 1 + 1177.6 * 2 + 1177.6 * 7 / 12 + 4096 * (5 + 25) / 60
    assert shot["memory_gib_h"] * 1024 == pytest.approx(expected_mib_h)
    assert shot["memory_saved"] == pytest.approx(1 - shot["memory_gib_h"] / 16.0)


def test_replay_options_are_checked(files, capsys):
    trace, series = files
    assert run_command("backtest", ["--replay", "--trace", str(trace)]) == 2
    assert "--replay needs --series" in capsys.readouterr().err
    assert run_command("backtest", ["--trace", str(trace), "--series", str(series)]) == 2
    assert "--series need --replay" in capsys.readouterr().err
    argv = ["--replay", "--trace", str(trace), "--series", str(series), "--cadence-min", "0"]
    assert run_command("backtest", argv) == 2
    assert "--cadence-min" in capsys.readouterr().err


def test_knobs_are_chosen_on_the_tuning_period_and_reported_on_the_scored_one(files, capsys):
    trace, series = files
    argv = ["--replay", "--trace", str(trace), "--series", str(series), "--json", "--quiet"]
    argv += ["--tune-on", "2024-01-01..2024-01-03", "--score-on", "2024-01-03.."]
    assert run_command("backtest", argv) == 0
    body = json.loads(capsys.readouterr().out)
    # Runs 3 and 4 are scored: 2 h; run 4's kill is the request's only one.
    request = next(r for r in body["recommenders"] if r["name"] == "request")
    assert (body["scored_runs"], request["run_hours"], request["ooms"]) == (2, 2.0, 1)
    # the defaults, every safety swept and the five memory_release settings
    assert len(body["curves"]["brain"]) == 14
    assert {c["family"] for c in body["choices"]} >= {"brain", "vpa_like", "autopilot_like"}
    for choice in body["choices"]:
        point = next(p for p in body["curves"][choice["family"]] if p["name"] == choice["name"])
        assert choice["scored"]["memory_gib_h"] == point["memory_gib_h"]
    # On the tuning runs (1-2) nothing is killed, so each family's memory choice is its
    # cheapest member there.
    for choice in (c for c in body["choices"] if c["resource"] == "memory"):
        assert choice["tuned"]["ooms"] == 0


def test_the_table_shows_the_choices_and_the_curves(files, capsys):
    trace, series = files
    argv = ["--replay", "--trace", str(trace), "--series", str(series), "--quiet"]
    argv += ["--tune-on", "2024-01-01..2024-01-03", "--score-on", "2024-01-03.."]
    assert run_command("backtest", argv) == 0
    out = capsys.readouterr().out
    assert "figures on 2 runs: runs of 2024-01-03.., knobs tuned on 2024-01-01..2024-01-03" in out
    assert "Knobs chosen on the tuning period" in out
    assert "brain's curve at or above vpa_like on" in out
    request = next(line for line in out.splitlines() if line.startswith("request "))
    # Scored runs 3 and 4: one kill in 2 h is 500 per 1,000 run-hours.
    assert request.split()[4] == "500.00"
