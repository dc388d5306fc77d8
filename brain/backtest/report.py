"""The figures as an aligned terminal table and as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from brain.backtest.metrics import Curve, Figures, Row

COLUMNS = (
    # header, width, how to print a Figures
    ("runs", 7, lambda f: f"{f.runs}"),
    ("under", 8, lambda f: _percent(f.under_rate, 2)),
    ("slack", 7, lambda f: _percent(f.slack_mean, 0)),
    ("alloc/used", 10, lambda f: _ratio(f.alloc_used)),
    ("res-h vs req", 12, lambda f: _signed_percent(f.resource_hours_change)),
)
COLD_COLUMNS = COLUMNS[:2] + COLUMNS[3:4]
LEGEND = (
    "under: runs whose peak (memory max, CPU p95, GPU memory max) was above the size",
    "slack: mean (size - peak) / size over the other runs",
    "alloc/used: sum of sizes / sum of peaks",
    "res-h vs req: allocated resource-hours against the request as given",
    "a recommender without an opinion on a run is counted with the request as given",
)


def to_json(rows: list[Row], curves: list[Curve], meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` (source, runs, min_history...), one entry per recommender and resource, and
    the knob curves when they were swept."""
    result = meta | {
        "recommenders": [
            {"name": row.name, "resource": row.resource}
            | asdict(row.warm)
            | {"cold_start": asdict(row.cold_start)}
            for row in rows
        ]
    }
    if curves:
        result["curves"] = [asdict(curve) for curve in curves]
    return result


def to_table(rows: list[Row], min_history: int) -> str:
    """Rows grouped by resource, warm figures then the cold-start ones."""
    name_width = max([len("recommender")] + [len(r.name) for r in rows])
    warm_header = "  ".join(h.rjust(w) for h, w, _ in COLUMNS)
    cold_header = "  ".join(h.rjust(w) for h, w, _ in COLD_COLUMNS)
    lines = [
        f"{'':{name_width}}  {f'>= {min_history} earlier runs':^{len(warm_header)}}  | "
        f"{f'cold start (< {min_history})':^{len(cold_header)}}"
    ]
    for resource in dict.fromkeys(r.resource for r in rows):
        lines.append("")
        lines.append(f"{resource:{name_width}}  {warm_header}  | {cold_header}")
        for row in (r for r in rows if r.resource == resource):
            lines.append(
                f"{row.name:{name_width}}  {_cells(row.warm, COLUMNS)}  | "
                f"{_cells(row.cold_start, COLD_COLUMNS)}"
            )
    lines += ["", *LEGEND]
    return "\n".join(lines)


def _cells(figures: Figures, columns) -> str:
    return "  ".join(show(figures).rjust(width) for _, width, show in columns)


def _percent(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f}%"


def _signed_percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
