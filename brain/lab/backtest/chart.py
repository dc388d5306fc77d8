"""A PNG of under-provisioning against allocation: one point per recommender, a curve
per swept knob, one panel per resource. Lower left is better."""

from __future__ import annotations

from pathlib import Path

# A bare Figure renders with the Agg backend and leaves pyplot's global state alone.
from matplotlib.figure import Figure

from brain.lab.backtest.metrics import Curve, Row


def draw(rows: list[Row], curves: list[Curve], path: Path, title: str) -> None:
    resources = list(dict.fromkeys(r.resource for r in rows))
    fig = Figure(figsize=(6 * len(resources), 5))
    axes = fig.subplots(1, len(resources), squeeze=False)
    for ax, resource in zip(axes[0], resources, strict=True):
        for curve in (c for c in curves if c.resource == resource):
            xs = [p.alloc_used for p in curve.points]
            ys = [p.under_rate * 100 for p in curve.points]
            ax.plot(xs, ys, marker=".", alpha=0.6, label=f"{curve.family} ({curve.knob})")
            for p, x, y in zip(curve.points, xs, ys, strict=True):
                ax.annotate(f"{p.knob_value:g}", (x, y), fontsize=6, alpha=0.7)
        for row in (r for r in rows if r.resource == resource):
            f = row.warm
            if f.alloc_used is None or f.under_rate is None:
                continue
            ax.scatter([f.alloc_used], [f.under_rate * 100], zorder=3)
            ax.annotate(row.name, (f.alloc_used, f.under_rate * 100), fontsize=8)
        ax.set_yscale("symlog", linthresh=0.1)
        ax.set_xlabel("allocated / used (sum of sizes / sum of peaks)")
        ax.set_ylabel("runs under-provisioned (%)")
        ax.set_title(resource)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
