"""Which samples of a run the running stage can act on, found for all samples at once.

For a single-node run without training-speed samples, PS nodes or cluster state, the
only running-stage optimizer of the default pipeline that can propose anything is
``oom_risk``, and it acts on a sample only when memory use reaches ``risk_threshold``
of the allocation or the linear trend of the recent window crosses it within
``horizon_s``. Both tests compare a per-sample *level* with the allocation:

    level[k] = max(mem[k] / risk_threshold, trend of the window ending at k at +horizon_s)

so the replay calls the pipeline only on decision samples whose level reaches the
allocation (a little below it, against rounding), and the pipeline decides there as
it would anywhere. The window is the service's: samples at or after ``ts[k] -
window_s``; the trend needs ``min_trend_samples`` of them and a rising slope.
"""

from __future__ import annotations

import numpy as np

# Relative slack of the screen: a level this close below the allocation still calls
# the pipeline (the pipeline's own least squares and this one round differently).
TOLERANCE = 1e-4
# A window whose fitted rise over the horizon is within this of zero may be rising as
# oom_risk fits it (its least squares rounds differently from these running sums).
FLAT_RISE_MIB = 1.0
# Running-stage optimizers that propose nothing for one node without speed samples,
# PS or cluster state; with any other configured, every decision calls the pipeline.
QUIET_FOR_ONE_NODE = frozenset({"hot_ps", "ps_scaling", "worker_tuning", "cluster_shortage"})
# slow_node compares the step times of several workers: none in a trace.
QUIET_FOR_ONE_NODE |= {"slow_node"}


def oom_risk_levels(
    ts: np.ndarray,
    mem: np.ndarray,
    *,
    window_s: float,
    risk_threshold: float,
    horizon_s: float,
    min_trend_samples: int,
) -> np.ndarray:
    """``level`` per sample (see the module docstring); MiB."""
    n = len(ts)
    if n == 0:
        return np.zeros(0)
    ts = ts.astype(np.int64)
    y = mem.astype(float)
    first = np.searchsorted(ts, ts - window_s, side="left")
    here = np.arange(n)
    count = (here - first + 1).astype(float)
    # Sums over each window with x = seconds before its last sample (as oom_risk fits),
    # one offset at a time: windows are short, and small x keeps the sums exact.
    sx = np.zeros(n)
    sy = np.zeros(n)
    sxx = np.zeros(n)
    sxy = np.zeros(n)
    for back in range(int(count.max())):
        inside = here - back >= first
        j = np.where(inside, here - back, 0)
        x = np.where(inside, (ts[j] - ts).astype(float), 0.0)
        v = np.where(inside, y[j], 0.0)
        sx += x
        sy += v
        sxx += x * x
        sxy += x * v
    spread = count * sxx - sx * sx
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (count * sxy - sx * sy) / spread
        intercept = (sy - slope * sx) / count
    # "Rising" is judged generously: oom_risk's own fit may call a window rising whose
    # slope these sums round to zero or just below (0, 600, 1e-38 MiB), and letting a
    # sample through costs only a pipeline call, while screening one out changes a plan.
    rising = (
        (count >= max(min_trend_samples, 2)) & (spread > 0) & (slope * horizon_s > -FLAT_RISE_MIB)
    )
    trend = np.where(rising, intercept + slope * horizon_s, -np.inf)
    return np.maximum(y / risk_threshold, trend)


def candidates(levels: np.ndarray, decides: np.ndarray, allocation_mib: float) -> np.ndarray:
    """The decision samples whose level reaches ``allocation_mib``."""
    return np.flatnonzero(decides & (levels >= allocation_mib * (1.0 - TOLERANCE)))
