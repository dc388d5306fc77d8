"""``--chart``: steps/s and allocation over time (matplotlib, imported only here)."""

from __future__ import annotations

from pathlib import Path

from brain.lab.simulation.master import Run
from brain.lab.simulation.metrics import run_best


def write_chart(run: Run, path: Path, ps_busy: float = 1.0) -> None:
    """Steps/s against the best (its PS using at most ``ps_busy`` of their CPU), and the
    cores, workers and PS over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = run.scenario
    minutes = [x.t / 60 for x in run.timeline]
    best = run_best(run, ps_busy)
    fig, (speed_ax, alloc_ax) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    speed_ax.plot(minutes, [x.steps_per_sec for x in run.timeline], lw=0.8, label="steps/s")
    speed_ax.axhline(best.steps_per_sec, color="green", ls="--", lw=0.8, label="best in limits")
    for applied in run.applied:
        speed_ax.axvline(applied.t / 60, color="grey", lw=0.5, alpha=0.6)
    speed_ax.set_ylabel("steps/s")
    speed_ax.set_title(f"{s.name} (seed {run.seed}); grey lines: plans applied")
    speed_ax.legend(loc="lower right")
    alloc_ax.plot(minutes, [x.cpu for x in run.timeline], label="cores requested")
    alloc_ax.plot(minutes, [x.workers for x in run.timeline], label="workers training")
    alloc_ax.plot(minutes, [x.ps for x in run.timeline], label="PS")
    if s.limit_cpu is not None:
        alloc_ax.axhline(s.limit_cpu, color="red", ls="--", lw=0.8, label="CPU limit")
    alloc_ax.set_xlabel("minutes")
    alloc_ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
