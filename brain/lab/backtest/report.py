"""The figures as an aligned terminal table and as JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from brain.lab.backtest.metrics import Figures, Row
from brain.lab.backtest.runner import BacktestResult, Options
from brain.learned_sizing.model import MIN_EXAMPLES
from brain.learned_sizing.training import COLUMNS as LEARNED_RESOURCES

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


def scope(options: Options) -> str:
    """Which runs the figures cover and where the knobs were chosen."""
    if options.tune_on is not None and options.score_on is not None:
        return (
            f"out of time: knobs tuned on {options.tune_on.text}, scored on {options.score_on.text}"
        )
    if options.score_on is not None:
        return f"scored on {options.score_on.text}, knobs at their defaults"
    return "in-sample: all runs, knobs at their defaults"


def to_json(outcome: BacktestResult, meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` (source, runs, periods...), one entry per recommender and resource, and
    the knob curves, choices and dominance counts when knobs were swept."""
    result = meta | {
        "recommenders": [
            {"name": row.name, "resource": row.resource}
            | asdict(row.warm)
            | {"cold_start": asdict(row.cold_start)}
            for row in outcome.rows
        ]
    }
    if outcome.curves:
        result["curves"] = [asdict(curve) for curve in outcome.curves]
    if outcome.choices:
        result["choices"] = [asdict(choice) | {"name": choice.name} for choice in outcome.choices]
    if outcome.dominance:
        result["dominance"] = [asdict(d) for d in outcome.dominance]
    if outcome.calibration:
        result["calibration"] = [asdict(row) | {"ratio": row.ratio} for row in outcome.calibration]
    if outcome.model is not None:
        result["learned_model"] = {
            "period_start": outcome.model.period_start,
            "period_end": outcome.model.period_end,
            "runs": outcome.model.runs,
        }
    return result


def to_table(outcome: BacktestResult, options: Options) -> str:
    """A scope line, rows grouped by resource (warm figures then the cold-start ones), the
    knobs chosen on the tuning period and the dominance counts."""
    lines = [scope(options), ""]
    lines += _figures(outcome.rows, options.min_history)
    if outcome.choices:
        lines += ["", "knobs chosen on the tuning period (cheapest at or below the target):"]
        for c in outcome.choices:
            lines.append(
                f"  {c.resource}: {c.family} {c.knob}={c.value:g} (target {_percent(c.target, 2)}"
                f"; tuning {_percent(c.tuned.under_rate, 2)} at {_ratio(c.tuned.alloc_used)}"
                f", scored {_percent(c.scored.under_rate, 2)} at {_ratio(c.scored.alloc_used)})"
            )
    for d in outcome.dominance:
        lines.append(
            f"dominance on {d.resource}: {d.challenger}'s sweep beats {d.beaten}/{d.total} "
            "points of the simple rules' sweeps on both axes"
            + (f" (not: {', '.join(d.unbeaten)})" if d.unbeaten else "")
        )
    if outcome.calibration:
        lines += ["", *_calibration(outcome)]
    lines += _untrained(outcome)
    lines += ["", *LEGEND]
    return "\n".join(lines)


def _untrained(outcome: BacktestResult) -> list[str]:
    """Says why learned_peak has no row for a resource, rather than leaving it out unseen."""
    if outcome.model is None:
        return []
    shown = {row.resource for row in outcome.rows}
    missing = [r for r in LEARNED_RESOURCES if r in shown and r not in outcome.model.resources]
    if not missing:
        return []
    return [
        "",
        f"learned_peak not trained for {', '.join(missing)}: fewer than {MIN_EXAMPLES} "
        "training runs with earlier runs of their workload",
    ]


def _calibration(outcome: BacktestResult) -> list[str]:
    model = outcome.model
    lines = [
        f"learned_peak trained on {model.runs} runs ({model.period_start} .. "
        f"{model.period_end}); stated risk against observed, per decile of stated risk "
        "(scored runs x every risk of the sweep):",
        f"  {'resource':10} {'decile':>6} {'sizings':>8} {'stated':>17} {'mean':>7} "
        f"{'observed':>8} {'obs/stated':>10}",
    ]
    for row in outcome.calibration:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}"
        lines.append(
            f"  {row.resource:10} {row.decile:>6} {row.sizings:>8} "
            f"{_percent(row.stated_min, 2):>8}-{_percent(row.stated_max, 2):<8} "
            f"{_percent(row.stated_mean, 2):>7} {_percent(row.observed, 2):>8} {ratio:>10}"
        )
    return lines


def _figures(rows: list[Row], min_history: int) -> list[str]:
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
    return lines


def _cells(figures: Figures, columns) -> str:
    return "  ".join(show(figures).rjust(width) for _, width, show in columns)


def _percent(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value * 100:.{digits}f}%"


def _signed_percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.1f}%"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
