"""A job's own speed at the configurations it ran, fitted to a throughput curve, with how
sure the fit is where it has not been measured.

The curve is Optimus's (Peng et al., EuroSys 2018) with a CPU term in the manner of
DLRover-RM: the seconds one global step takes are a sum of non-negative parts,

    1 / speed = t0 + t1 / w + t2 / (w c) + t3 w + t4 / p + t5 / n + t6 w / n^2

with ``w`` trainers (workers and chief) of ``c`` cores each, ``p`` PS cores in all and
``n`` PS. ``t0`` is the serial part of a step, ``t1 / w`` the work the trainers share
whatever their CPU, ``t2 / (w c)`` the work their cores share, ``t3 w`` what each added
trainer costs the others (synchronisation, contention), ``t4 / p`` the PS's service
time, and ``t5 / n + t6 w / n^2`` the exchange with the PS over their links: each PS
carries ``1 / n`` of the model to every trainer (Optimus's asynchronous form), and the
``w / n`` trainers sharing a PS's link queue behind each other. The last two are what
more PS (not more PS CPU) shorten: a network bound. Each part is linear in its
parameter, so a fit is a non-negative least squares over the measured points, each
weighted by how well its mean speed is known.

A job has few points (one per configuration it ran, a handful an hour), too few for
five parameters. So every subset of the parts is fitted (the exact non-negative
solution over five parts is the best of these), subsets with more parts than points
are left out, and the subsets are ranked by their Akaike information criterion: the
best explains the points with the fewest parts. Every subset within ``PLAUSIBLE_AIC``
of the best still explains the points as well as the noise allows; where they disagree
(one point, or a configuration far from the measured ones) the fit is uncertain, and
``Prediction.low`` and ``high`` span them.

A job that never ran another PS count cannot tell ``t5 / n`` from the serial part, nor
``t6 w / n^2`` from ``t3 w``: both kinds of curve are plausible, the simpler-named (no
PS count) first. So what one more PS would gain (``SpeedFit.ps_outlook``) is 0 on the
best curve and the band's high says how much it could be; once the count varied, the
points decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

# The parts of a step's time, in the order of the docstring's t0..t4.
PARTS = (
    "serial",
    "per_trainer",
    "per_trainer_core",
    "per_added_trainer",
    "per_ps_core",
    "per_ps",
    "per_trainer_per_ps",
)
# The parts the trainers' own work makes up (their count and cores shorten them); the
# rest of a step is waiting: on the serial part, on each other, on the PS.
_COMPUTE = (1, 2)
# The parts more PS shorten at the same cores per PS.
_PS_PARTS = (4, 5, 6)
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
    """What a job ran with: trainers, cores per trainer, PS cores in all (0: no PS) and
    the PS count (0: no PS, or not known: the PS-count parts then play no part)."""

    trainers: int
    trainer_cpu: float
    ps_cpu: float = 0.0
    ps_count: int = 0


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

    def seconds_per_step(self, configuration: Configuration, parts=None) -> float:
        """The seconds of a step at ``configuration``, of ``parts`` only when given."""
        x = features(configuration)
        return float(
            sum(
                x[i] * c
                for i, c in zip(self.parts, self.coefficients, strict=True)
                if parts is None or i in parts
            )
        )


@dataclass(frozen=True)
class PsOutlook:
    """What the fit says of the PS tier at one configuration.

    ``waiting_share``: the share of a step (best curve) the trainers do not compute in:
    the serial part, each other (synchronisation) and the PS. Near 0, trainers that use
    little of their CPU are sized above their use, not waiting on the network.
    ``ps_share``: the share of a step in the PS parts (service, exchange): of the
    waiting, what more PS can shorten (0 on the best curve until the PS count or CPU
    varied). ``one_more_ps_gain``: the relative speed gain of one more PS with today's
    cores per PS on the best curve; ``_low`` and ``_high`` the least and most of the
    plausible curves (never below 0: no part grows with the PS).
    """

    waiting_share: float
    ps_share: float
    one_more_ps_gain: float
    one_more_ps_low: float
    one_more_ps_high: float


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

    def ps_outlook(self, configuration: Configuration) -> PsOutlook | None:
        """The trainers' wait and one more PS's gain at ``configuration`` (None without
        PS, or with the PS count not known)."""
        if not _runs(configuration) or configuration.ps_count <= 0:
            return None
        per_ps = configuration.ps_cpu / configuration.ps_count
        gains = self.ps_gains(
            configuration, configuration.ps_count + 1, configuration.ps_cpu + per_ps
        )
        best = self.models[0]
        total = best.seconds_per_step(configuration)
        if total <= 0:
            return None
        compute = best.seconds_per_step(configuration, _COMPUTE)
        ps = best.seconds_per_step(configuration, _PS_PARTS)
        return PsOutlook(
            waiting_share=1 - compute / total,
            ps_share=ps / total,
            one_more_ps_gain=gains[1],
            one_more_ps_low=gains[0],
            one_more_ps_high=gains[2],
        )

    def ps_gains(
        self, configuration: Configuration, ps_count: int, ps_cpu: float
    ) -> tuple[float, float, float]:
        """The relative speed gain of ``ps_count`` PS with ``ps_cpu`` cores in all over
        ``configuration``, the trainers the same: the least of the plausible curves', the
        best curve's and the most (0 where a curve's step takes no time)."""
        other = Configuration(configuration.trainers, configuration.trainer_cpu, ps_cpu, ps_count)
        gains = []
        for model in self.models:
            now, then = model.seconds_per_step(configuration), model.seconds_per_step(other)
            gains.append(now / then - 1 if now > 0 and then > 0 else 0.0)
        return min(gains), gains[0], max(gains)


def features(configuration: Configuration) -> np.ndarray:
    """The parts of a step's time per unit of their parameter (``PARTS``' order)."""
    w = configuration.trainers
    c = configuration.trainer_cpu
    p = configuration.ps_cpu
    n = configuration.ps_count
    return np.array(
        [
            1.0,
            1 / w,
            1 / (w * c),
            float(w),
            1 / p if p > 0 else 0.0,
            1 / n if n > 0 else 0.0,
            w / n**2 if n > 0 else 0.0,
        ]
    )


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
