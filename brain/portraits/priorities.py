"""Priority from utilization: a score per user or group from their portraits, and the
priority class a scheduler may give their next jobs (lower for chronic over-askers).

The score is the owner's efficiency over the window (mean of used / requested
resource-hours over the resources they asked for, each capped at 1, see
``Hours.efficiency_score``) less a penalty for OOM kills (sizing so tight that runs
are restarted also wastes the cluster):

    score = clamp(efficiency − oom_weight × min(OOMs / jobs, 1), 0, 1)

Worked example: 22 core-hours requested and 9 used (0.409), 4 GiB-hours requested and
2 used (0.5), 2 GPU-hours requested and 0.5 used (0.25): efficiency 0.386; 3 jobs and
no OOM: score 0.386, between the default thresholds 0.3 and 0.6, so ``normal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from brain.config import PrioritySettings
from brain.db.engine import ReadSession
from brain.history.plausible import DEFAULT_MAX_RUN_S
from brain.portraits.jobs import Totals, owner_totals


class PriorityClass(StrEnum):
    high = "high"
    normal = "normal"
    low = "low"


@dataclass(frozen=True)
class Priority:
    score: float | None
    efficiency: float | None
    oom_rate: float
    priority_class: PriorityClass
    reason: str


def priority_of(totals: Totals, settings: PrioritySettings) -> Priority:
    """The score and class of an owner with these totals, and why."""
    efficiency = totals.hours.efficiency_score()
    oom_rate = min(totals.hours.oom_count / totals.jobs, 1.0) if totals.jobs else 0.0
    if totals.jobs < settings.priority_min_jobs:
        return Priority(
            None,
            efficiency,
            oom_rate,
            PriorityClass.normal,
            f"{totals.jobs} job(s) in the window, fewer than priority_min_jobs "
            f"{settings.priority_min_jobs}: not judged",
        )
    if efficiency is None:
        return Priority(None, None, oom_rate, PriorityClass.normal, "nothing requested: not judged")
    score = min(max(efficiency - settings.priority_oom_weight * oom_rate, 0.0), 1.0)
    evidence = (
        f"score {score:.3f} = efficiency {efficiency:.3f} − oom_weight "
        f"{settings.priority_oom_weight:g} × OOM rate {oom_rate:.3f}"
    )
    if score < settings.priority_low_below:
        return Priority(
            score,
            efficiency,
            oom_rate,
            PriorityClass.low,
            f"{evidence} < priority_low_below {settings.priority_low_below:g}",
        )
    if score >= settings.priority_high_from:
        return Priority(
            score,
            efficiency,
            oom_rate,
            PriorityClass.high,
            f"{evidence} ≥ priority_high_from {settings.priority_high_from:g}",
        )
    return Priority(
        score,
        efficiency,
        oom_rate,
        PriorityClass.normal,
        f"{evidence}, between priority_low_below {settings.priority_low_below:g} and "
        f"priority_high_from {settings.priority_high_from:g}",
    )


def priorities(
    session: ReadSession,
    by: str,
    since: datetime,
    settings: PrioritySettings,
    max_run_s: float = DEFAULT_MAX_RUN_S,
) -> list[tuple[str | None, str, Totals, Priority]]:
    """Every user or group (``by``) of each namespace with believed jobs ended since
    ``since``, as (namespace, key, totals, priority): lowest score first (owners not
    judged last), then by namespace and key."""
    rows = [
        (namespace, key, totals, priority_of(totals, settings))
        for namespace, key, totals in owner_totals(session, by, since, max_run_s)
    ]
    return sorted(rows, key=lambda r: (r[3].score is None, r[3].score or 0.0, r[0] or "", r[1]))
