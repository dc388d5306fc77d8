"""Replay the Bitbrains traces through Brain's loop and the baselines; time one month.

    .venv/bin/python scripts/bench_replay.py [--data ../shared/data/bitbrains] [--out DIR]

1. Timing: the runs of one month (2013-08 by default: about 13,000 runs, 4 million
   samples) replayed through the standard line-up (request, one-shot rules, VPA-like,
   Autopilot-like, Brain's defaults); wall and CPU seconds, and the load average before
   and after (the machine may be shared: say so with the figures).
2. Figures: `brain backtest --replay --tune-on 2013-07 --score-on 2013-08 --json` on
   both months, every family's knob swept, written to OUT/replay.json; the memory-saved
   against OOM-rate curves are printed per family.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def time_one_month(data: Path, month: str) -> dict:
    from brain.config import Settings
    from brain.lab.backtest.loop import lineup
    from brain.lab.backtest.loop.runner import figures_of, replay_runs
    from brain.lab.backtest.periods import parse_period
    from brain.optimizing import load_registry
    from brain.replay.harness import HarnessSettings
    from brain.replay.series import attach, period_of, read_series
    from brain.replay.trace import TraceFile

    trace = data / "runs.csv.gz"
    table = TraceFile(trace).load()
    table = table[parse_period(month).mask(table["start"])].reset_index(drop=True)
    before = load_average()
    wall, cpu = time.perf_counter(), time.process_time()
    samples = read_series(data / "series-all.csv.gz")
    series = attach(table, samples, period_s=period_of(trace), sample_s=300.0)
    loaded = time.perf_counter() - wall
    members = lineup.standard(load_registry(), Settings())
    outcomes = replay_runs(table, series, members, HarnessSettings())
    import numpy as np

    figures = figures_of(table, outcomes, np.ones(len(table), dtype=bool))
    return {
        "month": month,
        "runs": len(table),
        "samples": series.samples,
        "recommenders": [m.name for m in members],
        "load_s": round(loaded, 1),
        "wall_s": round(time.perf_counter() - wall, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "load_average_before": before,
        "load_average_after": load_average(),
        "in_sample_figures": {name: f.as_dict() for name, f in figures.items()},
    }


def tuned_replay(data: Path, out: Path, tune_on: str, score_on: str) -> dict:
    command = [
        str(ROOT / ".venv/bin/brain"),
        "backtest",
        "--replay",
        "--quiet",
        "--json",
        "--trace",
        str(data / "runs.csv.gz"),
        "--series",
        str(data / "series-all.csv.gz"),
        "--tune-on",
        tune_on,
        "--score-on",
        score_on,
    ]
    before = load_average()
    wall = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    body = json.loads(done.stdout)
    body["timing"] = {
        "wall_s": round(time.perf_counter() - wall, 1),
        "load_average_before": before,
        "load_average_after": load_average(),
    }
    (out / "replay.json").write_text(json.dumps(body, indent=2))
    return body


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/bitbrains")
    p.add_argument("--out", type=Path, default=Path("replay-results"))
    p.add_argument("--month", default="2013-08", help="the month timed (default 2013-08)")
    p.add_argument("--tune-on", default="2013-07")
    p.add_argument("--score-on", default="2013-08")
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--skip-figures", action="store_true")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    machine = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    print(json.dumps(machine))
    if not args.skip_timing:
        timing = time_one_month(args.data, args.month)
        (args.out / "timing.json").write_text(json.dumps(machine | timing, indent=2))
        print(
            f"one month ({timing['month']}: {timing['runs']} runs, {timing['samples']} samples, "
            f"{len(timing['recommenders'])} recommenders): {timing['wall_s']} s wall, "
            f"{timing['cpu_s']} s CPU (series read and attached in {timing['load_s']} s); "
            f"load average {timing['load_average_before']} -> {timing['load_average_after']}"
        )
    if not args.skip_figures:
        body = tuned_replay(args.data, args.out, args.tune_on, args.score_on)
        print(f"tuned replay: {body['timing']}")
        for family, points in body["curves"].items():
            cells = ", ".join(
                f"{p['name']}: {100 * p['memory_saved']:.1f}% @ {p['ooms_per_1000h']:.2f}"
                for p in points
            )
            print(f"{family}: {cells}")
        print(json.dumps(body["brain_above"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
