"""Fit the simulator's scaling coefficient to the measured throughput tables.

The simulator (``brain/lab/simulation/model.py``) models aggregate training speed with ``n``
workers as ``n x speed(1) / (1 + beta x (n - 1))``: each added worker brings less (the
Optimus/Amdahl form). This script fits ``beta`` per model:

- Pollux (``throughput/pollux/<model>/``): the step time of one replica at ``n``
  replicas divided by the single-GPU step time (``placements.csv`` placement "1") is
  ``1 + beta x (n - 1)``; least squares through the origin over every row at the
  model's most measured local batch size.
- Gavel (``throughput/gavel/simulation_throughputs.json``): isolated throughput at 1,
  2, 4, 8 GPUs gives ``beta = (n x X(1) / X(n) - 1) / (n - 1)``, the median over n
  and job types per GPU kind.

Usage: python scripts/fit_throughput.py [../shared/data/throughput]
The printed values are copied into brain/simulate/model.py (tests cannot read ../shared).
"""

from __future__ import annotations

import ast
import csv
import json
import statistics
import sys
from collections import Counter
from pathlib import Path


def pollux_beta(model_dir: Path) -> tuple[float, int]:
    rows = list(csv.DictReader((model_dir / "scalability.csv").open()))
    bsz = Counter(r["local_bsz"] for r in rows).most_common(1)[0][0]
    single = [
        float(r["step_time"])
        for r in csv.DictReader((model_dir / "placements.csv").open())
        if r["placement"] == "1" and r["local_bsz"] == bsz
    ]
    base = single[0]
    xs, ys = [], []
    for r in rows:
        if r["local_bsz"] != bsz:
            continue
        n = int(r["num_replicas"])
        xs.append(n - 1)
        ys.append(float(r["step_time"]) / base - 1)
    beta = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)
    return beta, len(xs)


def gavel_beta(path: Path, gpu: str) -> tuple[float, int]:
    table = json.loads(path.read_text())[gpu]
    by_job: dict[str, dict[int, float]] = {}
    for key, value in table.items():
        job, n = ast.literal_eval(key)
        by_job.setdefault(job, {})[n] = value["null"]
    betas = []
    for speeds in by_job.values():
        if speeds.get(1, 0) <= 0:
            continue
        for n, x in speeds.items():
            if n > 1 and x > 0:
                betas.append((n * speeds[1] / x - 1) / (n - 1))
    return statistics.median(betas), len(betas)


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/throughput")
    for model_dir in sorted(p for p in (root / "pollux").iterdir() if p.is_dir()):
        beta, n = pollux_beta(model_dir)
        print(f"pollux {model_dir.name:12s} beta={beta:.4f} ({n} rows)")
    for gpu in ("k80", "p100", "v100"):
        beta, n = gavel_beta(root / "gavel" / "simulation_throughputs.json", gpu)
        print(f"gavel  {gpu:12s} beta={beta:.4f} ({n} points)")


if __name__ == "__main__":
    main()
