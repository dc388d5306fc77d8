"""A job's own speed at the configurations it ran, fitted to a throughput curve, with how
sure the fit is where it has not been measured.

The curve is Optimus's (Peng et al., EuroSys 2018) with a CPU term in the manner of
DLRover-RM: the seconds one global step takes are a sum of non-negative parts,

    1 / speed = t0 + t1 / w + t2 / (w c) + t3 w + t4 / p

with ``w`` trainers (workers and chief) of ``c`` cores each and ``p`` PS cores in all.
``t0`` is the serial part of a step, ``t1 / w`` the work the trainers share whatever
their CPU, ``t2 / (w c)`` the work their cores share, ``t3 w`` what each added trainer
costs the others (synchronisation, contention) and ``t4 / p`` the PS's service time.
Each part is linear in its parameter, so a fit is a non-negative least squares over
the measured points, each weighted by how well its mean speed is known.

A job has few points (one per configuration it ran, a handful an hour), too few for
five parameters. So every subset of the parts is fitted (the exact non-negative
solution over five parts is the best of these), subsets with more parts than points
are left out, and the subsets are ranked by their Akaike information criterion: the
best explains the points with the fewest parts. Every subset within ``PLAUSIBLE_AIC``
of the best still explains the points as well as the noise allows; where they disagree
(one point, or a configuration far from the measured ones) the fit is uncertain, and
``Prediction.low`` and ``high`` span them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

# The parts of a step's time, in the order of the docstring's t0..t4.
PARTS = ("serial", "per_trainer", "per_trainer_core", "per_added_trainer", "per_ps_core")
# Subsets whose AIC is at most this above the best's are as plausible (Burnham and
# Anderson's rule of thumb).
PLAUSIBLE_AIC = 2.0
# The least relative noise of one speed sample: a point of identical samples is still
# known only this well.
MIN_SAMPLE_NOISE = 0.01
# Coefficients this far below zero are rounding; further, the subset is not a fit.
_NEGATIVE = -1e-12


@dataclass(frozen=True)
class Configuration:
    """What a job ran with: trainers, cores per trainer, PS cores in all (0: no PS)."""

    trainers: int
    trainer_cpu: float
    ps_cpu: float = 0.0


@dataclass(frozen=True)
class SpeedPoint:
    """The mean speed measured at one configuration and how well it is known."""

    configuration: Configuration
    steps_per_sec: float
    samples: int
    # Standard deviation of one sample, relative to the mean.
    noise: float = MIN_SAMPLE_NOISE

    @property
    def relative_stderr(self) -> float:
        """Standard error of the mean, relative to it."""
        return max(self.noise, MIN_SAMPLE_NOISE) / math.sqrt(max(self.samples, 1))


@dataclass(frozen=True)
class Prediction:
    steps_per_sec: float
    low: float
    high: float
    # True when the configuration was measured: the speed is its mean.
    measured: bool = False

    @property
    def uncertainty(self) -> float:
        """The band's width relative to the prediction (0: sure)."""
        return (self.high - self.low) / self.steps_per_sec if self.steps_per_sec > 0 else 0.0


@dataclass(frozen=True)
class _Model:
    parts: tuple[int, ...]
    coefficients: tuple[float, ...]
    aic: float

    def seconds_per_step(self, configuration: Configuration) -> float:
        x = features(configuration)
        return float(sum(x[i] * c for i, c in zip(self.parts, self.coefficients, strict=True)))


@dataclass(frozen=True)
class SpeedFit:
    """The plausible curves through a job's points, the best first."""

    points: tuple[SpeedPoint, ...]
    models: tuple[_Model, ...]

    @property
    def parameters(self) -> dict[str, float]:
        """The best curve's parameters by part name (parts it leaves out are 0)."""
        best = self.models[0]
        found = dict(zip(best.parts, best.coefficients, strict=True))
        return {name: found.get(i, 0.0) for i, name in enumerate(PARTS)}

    def predict(self, configuration: Configuration) -> Prediction:
        """The speed at ``configuration``: the measured mean where it was measured (two
        standard errors either side), else the best curve's, between the lowest and
        highest of the plausible curves'."""
        if not _runs(configuration):
            return Prediction(0.0, 0.0, 0.0)
        for point in self.points:
            if point.configuration == configuration:
                spread = 2 * point.relative_stderr * point.steps_per_sec
                return Prediction(
                    point.steps_per_sec,
                    point.steps_per_sec - spread,
                    point.steps_per_sec + spread,
                    measured=True,
                )
        speeds = [_speed(m.seconds_per_step(configuration)) for m in self.models]
        return Prediction(speeds[0], min(speeds), max(speeds))


def features(configuration: Configuration) -> np.ndarray:
    """The parts of a step's time per unit of their parameter (``PARTS``' order)."""
    w = configuration.trainers
    c = configuration.trainer_cpu
    p = configuration.ps_cpu
    return np.array([1.0, 1 / w, 1 / (w * c), float(w), 1 / p if p > 0 else 0.0])


def fit(points: Sequence[SpeedPoint]) -> SpeedFit | None:
    """The plausible curves through ``points`` (None without a point of positive speed)."""
    usable = [p for p in points if p.steps_per_sec > 0 and _runs(p.configuration)]
    if not usable:
        return None
    x = np.array([features(p.configuration) for p in usable])
    y = np.array([1 / p.steps_per_sec for p in usable])
    # A point's weight: its seconds per step are known to its relative standard error.
    weights = np.array([1 / (p.relative_stderr * (1 / p.steps_per_sec)) for p in usable])
    models = []
    for size in range(1, min(len(usable), len(PARTS)) + 1):
        for parts in combinations(range(len(PARTS)), size):
            model = _fit_parts(x, y, weights, parts, len(usable))
            if model is not None:
                models.append(model)
    if not models:
        return None
    models.sort(key=lambda m: (m.aic, len(m.parts)))
    plausible = tuple(m for m in models if m.aic <= models[0].aic + PLAUSIBLE_AIC)
    return SpeedFit(tuple(usable), plausible)


def _fit_parts(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray, parts: tuple[int, ...], n: int
) -> _Model | None:
    """The weighted least-squares curve of ``parts``; None when its columns are not
    independent over the points or a coefficient comes out negative."""
    a = x[:, parts] * weights[:, None]
    b = y * weights
    if np.any(np.all(x[:, parts] == 0, axis=0)):
        return None  # a part the points never exercise (no PS)
    if np.linalg.matrix_rank(a, tol=1e-9 * max(np.abs(a).max(), 1e-300)) < len(parts):
        return None
    coefficients, *_ = np.linalg.lstsq(a, b, rcond=None)
    if np.any(coefficients < _NEGATIVE * np.abs(b).max()):
        return None
    coefficients = np.clip(coefficients, 0.0, None)
    # Weighted residuals are in standard errors: their sum of squares is a chi-square.
    # Rounded, so that curves through the points alike rank by their parts' order.
    chi_square = round(float(np.sum((a @ coefficients - b) ** 2)), 9)
    return _Model(parts, tuple(float(c) for c in coefficients), chi_square + 2 * len(parts))


def _runs(configuration: Configuration) -> bool:
    """Whether the configuration can take a step at all: trainers with cores. A point
    whose trainers' cores are unknown (0) says nothing about the compute part."""
    return configuration.trainers > 0 and configuration.trainer_cpu > 0


def _speed(seconds_per_step: float) -> float:
    return 1 / seconds_per_step if seconds_per_step > 0 else math.inf
