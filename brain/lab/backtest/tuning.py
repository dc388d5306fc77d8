"""Out-of-time choices: a knob is picked on the tuning period and reported on the scored one.

Per swept family (a simple rule's margin, a recommender's safety) and resource, the
chosen value is the one with the lowest allocated/used among those whose
under-provisioning on the tuning period is at most the resource's target; when none
reaches the target, the one with the lowest under-provisioning. Its figures on the
scored period are what it would really have done.

Dominance: a point of a simple rule's sweep is beaten when some point of the
challenger's sweep is below it on both axes (fewer runs under-provisioned and less
allocated per used), on the same period.
"""

from __future__ import annotations

from dataclasses import dataclass

from brain.lab.backtest.metrics import Curve, Figures

# Under-provisioning the knobs are tuned to, per resource (the targets; for GPU
# memory about what max of the last 7 runs x 1.15 gives on the GenAI trace).
DEFAULT_TARGETS = {"memory": 0.005, "cpu": 0.01, "gpu_memory": 0.04}
# The simple rules' sweep families start so (see lineup.sweeps).
RULE_PREFIXES = ("max_last", "p90_last")


@dataclass(frozen=True)
class Choice:
    """The knob value picked for a family on one resource, and how it fared."""

    family: str
    knob: str
    resource: str
    value: float
    target: float
    tuned: Figures  # on the tuning period
    scored: Figures  # on the scored period
    scored_cold_start: Figures  # on the scored period's cold-start runs

    @property
    def name(self) -> str:
        return f"{self.family} tuned {self.knob}={self.value:g}"


def choose(points: list[tuple[float, Figures]], target: float) -> float | None:
    """The knob value of ``points`` (value, tuning-period figures) as the module says."""
    known = [(v, f) for v, f in points if f.under_rate is not None and f.alloc_used is not None]
    if not known:
        return None
    meeting = [(f.alloc_used, v) for v, f in known if f.under_rate <= target]
    if meeting:
        return min(meeting)[1]
    return min((f.under_rate, f.alloc_used, v) for v, f in known)[2]


@dataclass(frozen=True)
class Dominance:
    """How many points of the simple rules' sweeps the challenger beats on one resource."""

    challenger: str
    resource: str
    beaten: int
    total: int
    unbeaten: tuple[str, ...]  # "family knob=value" of the points not beaten


def dominance(curves: list[Curve], challenger: str) -> list[Dominance]:
    """Per resource the challenger's sweep has, its wins over the simple rules' points."""
    found = []
    for mine in (c for c in curves if c.family == challenger):
        rules = [
            c for c in curves if c.resource == mine.resource and c.family.startswith(RULE_PREFIXES)
        ]
        unbeaten = [
            f"{rule.family} {rule.knob}={p.knob_value:g}"
            for rule in rules
            for p in rule.points
            if not any(
                q.under_rate < p.under_rate and q.alloc_used < p.alloc_used for q in mine.points
            )
        ]
        total = sum(len(rule.points) for rule in rules)
        if total:
            found.append(
                Dominance(challenger, mine.resource, total - len(unbeaten), total, tuple(unbeaten))
            )
    return found
