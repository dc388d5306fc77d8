"""Week-by-week charts drawn on the server as inline SVG: no script, no outside asset,
readable without the page's scripts. Each chart has a title, axes labelled with their
units and a text alternative (its <title> and <desc>); the trend table under the charts
carries every number too."""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

from brain.portraits.trend import Week

WIDTH, HEIGHT = 360, 200
LEFT, RIGHT, TOP, BOTTOM = 52, 10, 12, 40
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
TICKS = 4
# Week labels under the x axis: at most this many, evenly spaced, so they stay apart.
MAX_X_LABELS = 8
# A bar is at most this wide: a short window's few weeks are not slabs.
MAX_BAR_W = 28.0


@dataclass(frozen=True)
class Series:
    label: str
    css: str  # the class that colours it (console.css)
    values: list[float | None]


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str  # the y axis' label
    series: list[Series]  # stacked bars, bottom first; a single series with line=True
    line: bool = False
    fixed_max: float | None = None
    whole: bool = False  # counts: whole-number ticks


def trend_charts(weeks: list[Week], price_label: str) -> list[tuple[str, Markup]]:
    """Waste (GPU, CPU, memory hours: used and wasted, stacked to the request),
    efficiency, OOM kills and, where anything is priced, cost (titled with the prices'
    ``price_label``), per ISO week."""
    priced = any(w.cost is not None for w in weeks)
    charts = [
        _hours_chart(weeks, "gpu", "GPU-hours", "requested_gpu_hours", "used_gpu_hours"),
        _hours_chart(weeks, "cpu", "Core-hours", "requested_core_hours", "used_core_hours"),
        _hours_chart(weeks, "memory", "GiB-hours", "requested_gib_hours", "used_gib_hours"),
        Chart(
            "efficiency",
            "Efficiency (mean of used ÷ requested, each at most 100%)",
            "percent",
            [Series("efficiency", "eff", [_percent(w.hours.efficiency_score()) for w in weeks])],
            line=True,
            fixed_max=100.0,
        ),
        Chart(
            "oom",
            "OOM kills",
            "kills",
            [Series("OOM kills", "oom", [float(w.hours.oom_count) for w in weeks])],
            whole=True,
        ),
    ]
    if priced:
        used = [w.cost.used_usd if w.cost else 0.0 for w in weeks]
        wasted = [w.cost.waste_usd if w.cost else 0.0 for w in weeks]
        charts.append(
            Chart(
                "cost",
                f"Cost at {price_label}: used and wasted",
                "US dollars",
                [Series("used", "used", used), Series("wasted", "waste", wasted)],
            )
        )
    labels = [w.iso_week for w in weeks]
    return [(chart.title, svg(chart, labels)) for chart in charts]


def _hours_chart(weeks: list[Week], key: str, unit: str, requested: str, used: str) -> Chart:
    used_values = [getattr(w.hours, used) for w in weeks]
    # Used above the request (bursting) wastes nothing: the waste bar is never negative.
    wasted = [max(getattr(w.hours, requested) - getattr(w.hours, used), 0.0) for w in weeks]
    return Chart(
        f"{key}-hours",
        f"{unit}: used and wasted",
        unit,
        [Series("used", "used", used_values), Series("wasted", "waste", wasted)],
    )


def _percent(fraction: float | None) -> float | None:
    return None if fraction is None else fraction * 100


def svg(chart: Chart, labels: list[str]) -> Markup:
    """The chart as an <svg> element (its id ``trend-<key>``)."""
    count = max(len(labels), 1)
    stacked = [sum(s.values[i] or 0.0 for s in chart.series) for i in range(len(labels))] or [0.0]
    top = chart.fixed_max or axis_top(max(stacked), chart.whole)
    slot = PLOT_W / count
    ident = f"trend-{chart.key}"
    parts = [
        f'<svg class="trend" id="{ident}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{ident}-title {ident}-desc" data-chart="{chart.key}">',
        f'<title id="{ident}-title">{escape(chart.title)}, per ISO week (UTC)</title>',
        f'<desc id="{ident}-desc">{escape(_describe(chart, labels))}</desc>',
    ]
    for i in range(TICKS + 1):
        value = top * i / TICKS
        y = _y(value, top)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y}" y2="{y}"/>')
        parts.append(
            f'<text class="tick" x="{LEFT - 4}" y="{y + 3}" text-anchor="end">'
            f"{_number(value)}</text>"
        )
    parts.append(
        f'<text class="axis" transform="translate(12 {TOP + PLOT_H / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(chart.unit)}</text>'
    )
    step = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    for i, label in enumerate(labels):
        if i % step == 0:
            x = LEFT + slot * (i + 0.5)
            parts.append(
                f'<text class="tick" x="{x:.1f}" y="{TOP + PLOT_H + 13}" '
                f'text-anchor="middle">{escape(label[5:])}</text>'
            )
    parts.append(
        f'<text class="axis" x="{LEFT + PLOT_W / 2}" y="{HEIGHT - 4}" '
        'text-anchor="middle">ISO week (UTC)</text>'
    )
    parts.extend(_line(chart, labels, top, slot) if chart.line else _bars(chart, labels, top, slot))
    parts.append(
        f'<line class="axis-line" x1="{LEFT}" x2="{LEFT + PLOT_W}" '
        f'y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}"/>'
    )
    parts.append("</svg>")
    return Markup("".join(parts))


def _bars(chart: Chart, labels: list[str], top: float, slot: float) -> list[str]:
    width = min(max(slot * 0.7, 1.0), MAX_BAR_W)
    out = []
    for i, label in enumerate(labels):
        x = LEFT + slot * i + (slot - width) / 2
        base = 0.0
        for series in chart.series:
            value = series.values[i] or 0.0
            if value > 0:
                y0, y1 = _y(base, top), _y(base + value, top)
                tip = f"{label}: {_readable(value)} {chart.unit} {series.label}"
                out.append(
                    f'<rect class="{series.css}" x="{x:.1f}" y="{y1:.1f}" width="{width:.1f}" '
                    f'height="{max(y0 - y1, 0.5):.1f}"><title>{escape(tip)}</title></rect>'
                )
            base += value
    return out


def _line(chart: Chart, labels: list[str], top: float, slot: float) -> list[str]:
    series = chart.series[0]
    points = [
        (LEFT + slot * (i + 0.5), _y(value, top), label, value)
        for i, (label, value) in enumerate(zip(labels, series.values, strict=True))
        if value is not None
    ]
    out = []
    if len(points) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y, *_ in points)
        out.append(f'<polyline class="{series.css}" points="{path}"/>')
    for x, y, label, value in points:
        tip = f"{label}: {value:.0f}% {series.label}"
        out.append(
            f'<circle class="{series.css}" cx="{x:.1f}" cy="{y:.1f}" r="3">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return out


def _describe(chart: Chart, labels: list[str]) -> str:
    """Every week's values in words: the chart for a reader who cannot see it."""
    weeks = []
    for i, label in enumerate(labels):
        values = ", ".join(f"{_readable(s.values[i])} {s.label}" for s in chart.series)
        weeks.append(f"{label}: {values}")
    return f"{chart.title} in {chart.unit}. " + "; ".join(weeks) + "."


def _y(value: float, top: float) -> float:
    return round(TOP + PLOT_H - (value / top) * PLOT_H, 1)


def axis_top(value: float, whole: bool = False) -> float:
    """The y axis' top: four steps of 1, 2, 2.5 or 5 times a power of ten (with
    ``whole``, of whole numbers only), the smallest reaching ``value``, so that each
    tick is a round number; one step of 0.25 (or 1) for nothing."""
    raw = value / TICKS
    if raw <= 0:
        return TICKS * (1.0 if whole else 0.25)
    power = 10 ** math.floor(math.log10(raw))
    steps = [m * power for m in (1, 2, 2.5, 5, 10)]
    if whole:
        steps = [step for step in steps if step >= 1 and step == int(step)] or [1.0]
    step = next(step for step in steps if step >= raw * (1 - 1e-9))
    return step * TICKS


def _number(value: float) -> str:
    """Up to six decimals, trailing zeros dropped (0.625, 1,250)."""
    text = f"{value:,.6f}".rstrip("0")
    return text.rstrip(".")


def _readable(value: float | None) -> str:
    """Three significant digits below 1, two decimals above."""
    if value is None:
        return "none requested"
    return _number(round(value, 2)) if abs(value) >= 1 else f"{value:.3g}"
