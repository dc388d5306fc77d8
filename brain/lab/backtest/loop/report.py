"""The replay's figures as a table for people or JSON for programs."""

from __future__ import annotations

from brain.lab.backtest.loop.figures import LoopFigures
from brain.lab.backtest.loop.runner import LoopOutcome, above

COLUMNS = (
    ("recommender", 30),
    ("mem saved", 9),
    ("slack", 6),
    ("mem a/u", 7),
    ("OOM/1kh", 7),
    ("OOM runs", 8),
    ("restarts/run", 12),
    ("lost h", 8),
    ("cpu saved", 9),
    ("core a/u", 8),
    ("throttled", 9),
)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def line(name: str, f: LoopFigures) -> str:
    cells = (
        name,
        _pct(f.memory_saved),
        _pct(f.slack),
        _num(f.memory_alloc_used),
        _num(f.ooms_per_1000h),
        _pct(f.oom_run_share),
        _num(f.restarts_per_run, 3),
        _num(f.lost_h, 1),
        _pct(f.cpu_saved),
        _num(f.core_alloc_used),
        _pct(f.throttled_share),
    )
    return "  ".join(
        str(c).rjust(w) if i else str(c).ljust(w)
        for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS, strict=True))
    )


def to_table(outcome: LoopOutcome, scope: str) -> str:
    header = "  ".join(t.rjust(w) if i else t.ljust(w) for i, (t, w) in enumerate(COLUMNS))
    out = [
        f"{outcome.runs} runs of {outcome.workloads} workloads; figures on "
        f"{outcome.scored_runs} runs: {scope}. Saved: against the request as given; a/u: "
        "allocated / used hours; OOM/1kh: OOM kills per 1,000 run-hours.",
        "",
        header,
    ]
    out += [line(name, f) for name, f in outcome.rows]
    if outcome.choices:
        out += ["", "Knobs chosen on the tuning period, figures on the scored period:", header]
        for choice in outcome.choices:
            out.append(line(f"{choice.family} [{choice.resource}] {choice.name}", choice.scored))
    if outcome.curves:
        out += ["", "Memory saved against OOM kills per 1,000 run-hours (scored period):"]
        for family, points in outcome.curves.items():
            cells = ", ".join(
                f"{p.name}: {_pct(p.figures.memory_saved)} @ {_num(p.figures.ooms_per_1000h)}"
                for p in points
            )
            out.append(f"  {family}: {cells}")
        brain = outcome.curves.get("brain")
        for family in ("vpa_like", "autopilot_like"):
            if brain and family in outcome.curves:
                beaten, total, missed = above(brain, outcome.curves[family])
                tail = f" (not: {', '.join(missed)})" if missed else ""
                out.append(f"  brain's curve at or above {family} on {beaten}/{total} points{tail}")
    return "\n".join(out)


def to_json(outcome: LoopOutcome, meta: dict) -> dict:
    body = {
        **meta,
        "runs": outcome.runs,
        "workloads": outcome.workloads,
        "scored_runs": outcome.scored_runs,
        "recommenders": [{"name": name, **f.as_dict()} for name, f in outcome.rows],
        "choices": [
            {
                "family": c.family,
                "resource": c.resource,
                "name": c.name,
                "tuned": c.tuned.as_dict(),
                "scored": c.scored.as_dict(),
            }
            for c in outcome.choices
        ],
        "curves": {
            family: [{"name": p.name, **p.figures.as_dict()} for p in points]
            for family, points in outcome.curves.items()
        },
    }
    brain = outcome.curves.get("brain")
    body["brain_above"] = {
        family: dict(
            zip(("beaten", "total", "missed"), above(brain, outcome.curves[family]), strict=True)
        )
        for family in ("vpa_like", "autopilot_like")
        if brain and family in outcome.curves
    }
    return body
