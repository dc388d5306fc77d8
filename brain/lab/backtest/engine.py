"""The replay: every run, in time order, sized by every recommender from earlier runs only.

Runs are taken per workload in the order of the normalized run table (start time,
then input order). A run's history is the runs of its workload before it in that
order, never itself or a later one; the recommender gets only the run's submission
(requests), not its usage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

import numpy as np
import pandas as pd

from brain.replay.resources import present
from brain.replay.runs import Recommender, runs_of

# Called after each workload with the number of runs replayed so far.
ProgressCallback = Callable[[int], None]


@dataclass
class Replay:
    """Per (recommender, resource) a size per row of the run table; NaN is no opinion."""

    history_len: np.ndarray
    sizes: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)


def replay(
    table: pd.DataFrame,
    recommenders: Sequence[Recommender],
    progress: ProgressCallback | None = None,
) -> Replay:
    """Replay the normalized run ``table`` through ``recommenders``."""
    names = [r.name for r in recommenders]
    if len(set(names)) != len(names):
        raise ValueError(f"recommender names must be unique: {names}")
    resources = {r.name for r in present(table)}
    asked = [(r, sorted(r.resources & resources)) for r in recommenders]
    asked = [(r, covered) for r, covered in asked if covered]
    result = Replay(history_len=np.zeros(len(table), dtype=int))
    for recommender, covered in asked:
        for resource in covered:
            result.sizes[(recommender.name, resource)] = np.full(len(table), np.nan)
    done = 0
    for _, group in groupby(runs_of(table), key=lambda run: run.submission.workload):
        runs = list(group)
        for position, run in enumerate(runs):
            result.history_len[run.index] = position
            history = runs[:position]
            for recommender, covered in asked:
                sizes = recommender.recommend(run.submission, history)
                for resource in covered:
                    size = sizes.get(resource)
                    if size is not None:
                        result.sizes[(recommender.name, resource)][run.index] = size
        done += len(runs)
        if progress is not None:
            progress(done)
    return result
