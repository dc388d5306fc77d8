"""``brain backtest`` end to end on a small trace file."""

from __future__ import annotations

import io
import json

import pytest

from brain.progress import ProgressBar
from tests.commands import run_command


@pytest.fixture
def trace_file(tmp_path):
    header = "workload,day,samples,req_cpu,req_memory_mib,cpu_mean,cpu_p95,cpu_max,mem_mean,mem_max"
    lines = [header]
    for w in ("a", "b"):
        for d in range(1, 8):
            lines.append(f"{w},2024-01-0{d},288,2,4096,0.2,0.{d},0.{d + 1},500,{1000 + 50 * d}")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_table_lists_every_recommender_per_resource(trace_file, capsys):
    assert run_command("backtest", ["--trace", str(trace_file), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    memory = lines.index(next(line for line in lines if line.startswith("memory")))
    names = [line.split()[0] for line in lines[memory + 1 : memory + 6]]
    assert names == ["request", "startup", "max_last7_x1.15", "p90_last7_x1.15", "learned_margin"]
    # 14 runs, 10 with history: too few for learned_peak, which says so instead of no row.
    assert (
        "learned_peak not trained for memory, cpu: fewer than 50 training runs with earlier "
        "runs of their workload" in lines
    )
    # aligned: the separator between warm and cold-start figures is in one column
    assert len({line.index("|") for line in lines if "|" in line}) == 1


def test_json_has_the_figures_of_every_recommender_and_resource(trace_file, capsys):
    assert (
        run_command(
            "backtest", ["--trace", str(trace_file), "--json", "--quiet", "--min-history", "2"]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["runs"] == 14 and report["workloads"] == 2 and report["min_history"] == 2
    entry = next(
        e for e in report["recommenders"] if e["name"] == "request" and e["resource"] == "memory"
    )
    assert entry["runs"] == 10 and entry["cold_start"]["runs"] == 4
    assert entry["under_rate"] == 0.0 and entry["resource_hours_change"] == 0.0
    keys = {"name", "resource", "runs", "under_rate", "slack_mean", "alloc_used"}
    assert all(keys <= set(e) and "cold_start" in e for e in report["recommenders"])


def test_a_chart_is_written_and_timing_reported(trace_file, tmp_path, capsys):
    chart = tmp_path / "chart.png"
    assert run_command("backtest", ["--trace", str(trace_file), "--chart", str(chart)]) == 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "14 runs of 2 workloads replayed in" in capsys.readouterr().err


def test_an_unreadable_trace_exits_with_2(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("day,samples\n2024-01-01,3\n")
    assert run_command("backtest", ["--trace", str(bad)]) == 2
    assert "workload" in capsys.readouterr().err
    assert run_command("backtest", ["--trace", str(tmp_path / "missing.csv")]) == 2


def test_a_trace_without_any_resource_exits_with_2(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("workload,day,samples\nw,2024-01-01,3\n")
    assert run_command("backtest", ["--trace", str(empty)]) == 2
    assert "no resource" in capsys.readouterr().err


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_on_a_terminal_only_and_not_when_quiet():
    shown = Terminal()
    bar = ProgressBar(1000, "replay", stream=shown)
    for done in (1, 2, 500, 1000):
        bar(done)
    # 1 and 2 are within the same percent: drawn once; the line ends at 100%
    assert shown.getvalue().count("\r") == 3
    assert shown.getvalue().endswith("100% 1000/1000 runs\n")
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        ProgressBar(10, "replay", quiet=quiet, stream=stream)(10)
        assert stream.getvalue() == ""
