"""Which samples of a run the running stage can act on, found for all samples at once.

For a single-node run without training-speed samples, PS nodes or cluster state, the
only running-stage optimizers of the default pipeline that can propose anything are
``oom_risk`` and ``memory_release``. ``oom_risk`` acts on a sample only when memory use
reaches ``risk_threshold`` of the allocation or the linear trend of the recent window
crosses it within ``horizon_s``. Both tests compare a per-sample *level* with the
allocation:

    level[k] = max(mem[k] / risk_threshold, trend of the window ending at k at +horizon_s)

``memory_release`` acts only when the peak of its longer window, covering at least
``hold_s``, times ``margin`` is at most ``below_share`` of the allocation: a per-sample
*ceiling* ``peak[k] x margin / below_share`` (infinite while the window covers less)
that the allocation must reach. The replay calls the pipeline only on decision samples
whose level reaches the allocation or whose ceiling the allocation reaches (with a
little slack, against rounding), and the pipeline decides there as it would anywhere.

The windows are the service's: samples at or after ``ts[k] - window_s``; the trend needs
``min_trend_samples`` of them and a rising slope.
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


def window_peaks(ts: np.ndarray, mem: np.ndarray, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per sample ``k``: the peak of ``mem`` over the samples at or after ``ts[k] -
    window_s`` up to ``k``, and the time of the first of them (the service's window)."""
    n = len(ts)
    if n == 0:
        return np.zeros(0), np.zeros(0, dtype=ts.dtype)
    first = np.searchsorted(ts, ts - window_s, side="left")
    # A sparse table: level j holds the peak of the 2**j samples from each index, so any
    # window is the larger of two overlapping power-of-two spans.
    table = [mem.astype(float)]
    while 2 ** len(table) <= n:
        half = 2 ** (len(table) - 1)
        prev = table[-1]
        table.append(np.maximum(prev[:-half], prev[half:]))
    here = np.arange(n)
    length = here - first + 1
    level = np.floor(np.log2(length)).astype(int)
    peaks = np.empty(n)
    for j in np.unique(level):
        at = np.flatnonzero(level == j)
        span = table[j]
        peaks[at] = np.maximum(span[first[at]], span[here[at] - 2**j + 1])
    return peaks, ts[first]


def release_ceilings(
    ts: np.ndarray,
    mem: np.ndarray,
    *,
    window_s: float,
    hold_s: float,
    margin: float,
    below_share: float,
) -> np.ndarray:
    """``ceiling`` per sample (see the module docstring); MiB."""
    peaks, since = window_peaks(ts, mem, window_s)
    covered = ts.astype(np.int64) - since.astype(np.int64) >= hold_s
    return np.where(covered, peaks * margin / below_share, np.inf)


def candidates(
    levels: np.ndarray,
    decides: np.ndarray,
    allocation_mib: float,
    ceilings: np.ndarray | None = None,
) -> np.ndarray:
    """The decision samples whose level reaches ``allocation_mib``, or whose ceiling
    ``allocation_mib`` reaches."""
    acts = levels >= allocation_mib * (1.0 - TOLERANCE)
    if ceilings is not None:
        acts |= ceilings <= allocation_mib * (1.0 + TOLERANCE)
    return np.flatnonzero(decides & acts)
