"""What a recommender sees: the run it sizes (requests only) and the runs before it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from brain.replay.resources import BY_NAME

if TYPE_CHECKING:  # pandas is the backtest extra's; only its loaders need it
    import pandas as pd


@dataclass(frozen=True, slots=True)
class Submission:
    """A run as known when it is submitted: who, when and what it asks for."""

    workload: str
    start: datetime
    req_cpu: float | None
    req_memory_mib: float | None
    req_gpu: float | None
    req_gpu_memory_mib: float | None
    gpu_mem_total_mib: float | None

    def request(self, resource: str) -> float | None:
        """The size as given for ``resource``."""
        return getattr(self, BY_NAME[resource].request)


@dataclass(frozen=True, slots=True)
class Run:
    """A finished run: its submission, how long it ran and what it used."""

    index: int  # row of the normalized run table
    submission: Submission
    duration_h: float
    cpu_mean: float | None
    cpu_p95: float | None
    cpu_max: float | None
    mem_mean: float | None
    mem_max: float | None
    gpu_util_mean: float | None
    gpu_mem_mib_max: float | None

    def peak(self, resource: str) -> float | None:
        """The usage a recommendation for ``resource`` must cover."""
        return getattr(self, BY_NAME[resource].peak)


class Recommender(Protocol):
    """Sizes a run from the runs of its workload that finished before it.

    ``recommend`` returns a size per resource it covers (``resources``), in the
    resource's unit; ``None`` means no opinion (the request as given then applies).
    ``history`` is oldest first and holds only earlier runs.
    """

    name: str
    resources: frozenset[str]

    def recommend(self, job: Submission, history: Sequence[Run]) -> Mapping[str, float | None]: ...


def runs_of(table: pd.DataFrame) -> list[Run]:
    """The rows of a normalized run table as ``Run`` objects, in table order."""
    runs = []
    for index, row in enumerate(table.itertuples(index=False)):
        submission = Submission(
            workload=row.workload,
            start=row.start.to_pydatetime(),
            req_cpu=_value(row.req_cpu),
            req_memory_mib=_value(row.req_memory_mib),
            req_gpu=_value(row.req_gpu),
            req_gpu_memory_mib=_value(row.req_gpu_memory_mib),
            gpu_mem_total_mib=_value(row.gpu_mem_total_mib),
        )
        runs.append(
            Run(
                index=index,
                submission=submission,
                duration_h=float(row.duration_h),
                cpu_mean=_value(row.cpu_mean),
                cpu_p95=_value(row.cpu_p95),
                cpu_max=_value(row.cpu_max),
                mem_mean=_value(row.mem_mean),
                mem_max=_value(row.mem_max),
                gpu_util_mean=_value(row.gpu_util_mean),
                gpu_mem_mib_max=_value(row.gpu_mem_mib_max),
            )
        )
    return runs


def _value(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)
