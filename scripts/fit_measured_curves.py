"""Fit the `measured` family's speed curves to the measured throughput tables.

For each Pollux model and local batch size (``throughput/pollux/<model>/``: one
replica's step time at 1-64 replicas, ``placements.csv`` and ``scalability.csv``), and
each Gavel V100 job type whose 1/2/4/8-GPU throughputs rise with the GPUs while the
throughput per GPU does not (``throughput/gavel/simulation_throughputs.json``; the
others, e.g. LM at batch 40 with 2.0x, 2.1x, 7.9x, measure something a scaling curve
cannot mean), the script:

1. takes each replica count's mean step time over the single-replica step time (Gavel:
   ``n x X(1) / X(n)``);
2. fits ``1 + a + b log2(n)`` to those means (``families.measured_curve.fit_curve``);
3. writes the fitted ``(a, b)`` to ``brain/lab/simulation/families/measured_table.py``
   and the means to ``tests/fixtures/measured_throughput_points.csv`` (the tests check
   the table against them), and prints each curve's largest speed error.

Usage: python scripts/fit_measured_curves.py [../shared/data/throughput]
(the tests read only the two committed files: a user's clone has no ../shared).
"""

from __future__ import annotations

import ast
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from brain.lab.simulation.families.measured_curve import MeasuredCurve, fit_curve, speed_errors

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "brain" / "lab" / "simulation" / "families" / "measured_table.py"
POINTS = REPO / "tests" / "fixtures" / "measured_throughput_points.csv"
# Pollux batch sizes measured at fewer replica counts than this are left out.
MIN_COUNTS = 8
GAVEL_GPU = "v100"
# Gavel's throughput per GPU may rise by this much with the GPUs (noise) and still count.
GAVEL_SUPERLINEAR_SLACK = 1.05


def pollux_points(model_dir: Path) -> dict[int, list[tuple[int, float]]]:
    """Batch size -> [(replicas, mean step time / single-replica step time)]."""
    single = {
        int(r["local_bsz"]): float(r["step_time"])
        for r in csv.DictReader((model_dir / "placements.csv").open())
        if r["placement"] == "1"
    }
    times: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in csv.DictReader((model_dir / "placements.csv").open()):
        n = sum(int(c) for c in r["placement"])
        times[int(r["local_bsz"])][n].append(float(r["step_time"]))
    for r in csv.DictReader((model_dir / "scalability.csv").open()):
        times[int(r["local_bsz"])][int(r["num_replicas"])].append(float(r["step_time"]))
    return {
        bsz: [(n, statistics.fmean(ts) / single[bsz]) for n, ts in sorted(by_n.items())]
        for bsz, by_n in sorted(times.items())
        if bsz in single and len(by_n) >= MIN_COUNTS
    }


def gavel_points(path: Path) -> dict[str, list[tuple[int, float]]]:
    table = json.loads(path.read_text())[GAVEL_GPU]
    speeds: dict[str, dict[int, float]] = defaultdict(dict)
    for key, value in table.items():
        job, n = ast.literal_eval(key)
        speeds[job][n] = value["null"]
    out = {}
    for job, by_n in sorted(speeds.items()):
        ns = sorted(by_n)
        if len(ns) < 3 or ns[0] != 1:
            continue
        ratios = [by_n[n] / by_n[1] for n in ns]
        # Speed rises with the GPUs, and no replica gets faster as the group grows.
        rising = all(b >= a for a, b in zip(ratios, ratios[1:], strict=False))
        per_gpu = [r / n for r, n in zip(ratios, ns, strict=True)]
        falling = all(
            b <= a * GAVEL_SUPERLINEAR_SLACK for a, b in zip(per_gpu, per_gpu[1:], strict=False)
        )
        if rising and falling:
            out[job] = [(n, n * by_n[1] / by_n[n]) for n in ns]
    return out


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/throughput")
    fitted: list[tuple[MeasuredCurve, list[tuple[int, float]]]] = []
    for model_dir in sorted(p for p in (root / "pollux").iterdir() if p.is_dir()):
        for bsz, points in pollux_points(model_dir).items():
            a, b = fit_curve(points)
            curve = MeasuredCurve("pollux", model_dir.name, bsz, a, b, max(n for n, _ in points))
            fitted.append((curve, points))
    for job, points in gavel_points(root / "gavel" / "simulation_throughputs.json").items():
        name, _, rest = job.partition(" (batch size ")
        a, b = fit_curve(points)
        batch = int(rest.rstrip(")") or 0)
        curve = MeasuredCurve(f"gavel-{GAVEL_GPU}", name, batch, a, b, max(n for n, _ in points))
        fitted.append((curve, points))

    with POINTS.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["source", "model", "batch", "replicas", "relative_step_time"])
        for curve, points in fitted:
            for n, t in points:
                writer.writerow([curve.source, curve.model, curve.batch, n, f"{t:.6f}"])
    lines = [
        '"""The `measured` family\'s curves, written by scripts/fit_measured_curves.py from',
        "../shared/data/throughput (Pollux, Apache-2.0; Gavel, MIT); do not edit by hand.",
        '"""',
        "",
        "from brain.lab.simulation.families.measured_curve import MeasuredCurve",
        "",
        "CURVES = (",
    ]
    for curve, points in fitted:
        worst = max(speed_errors(curve, [(n, round(t, 6)) for n, t in points]))
        print(
            f"{curve.key:40s} a={curve.sync_fixed:.4f} b={curve.sync_per_doubling:.4f} "
            f"points={len(points):2d} worst speed error {worst:.1%}"
        )
        names = f"{json.dumps(curve.source)}, {json.dumps(curve.model)}, {curve.batch}"
        lines.append(
            f"    MeasuredCurve({names}, {curve.sync_fixed:.6f}, {curve.sync_per_doubling:.6f}, "
            f"{curve.max_workers}),"
        )
    lines.append(")")
    TABLE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
