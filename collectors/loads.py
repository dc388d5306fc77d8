"""From Prometheus series to the load of each pod of each job: series are tied to a job
and a node (``collectors.mapping``), values converted to Brain's units, kept inside the
job's window, and OOM kills found as rises of the kill counter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from brain.bounds import MAX_STEP_TIME_S
from collectors.client import Series
from collectors.mapping import JobIndex, PodRef, SeriesMapper
from collectors.queries import STEP_TIME_SIGNAL, to_brain_unit
from collectors.reading import GroupAnswers
from collectors.windows import Window


@dataclass
class PodLoad:
    """One pod's points in the window: time -> sample signal (a ``NodePoint`` field, in
    Brain's unit) -> value; and its OOM kills: time -> containers."""

    ref: PodRef
    values: dict[datetime, dict[str, float]] = field(default_factory=dict)
    kills: dict[datetime, list[str]] = field(default_factory=dict)


@dataclass
class GroupLoad:
    """The pods of each job of a group (by job id) and how many series were tied to a
    job of the group (``matched``) or to no known job at all (``unmatched``)."""

    pods: dict[int, dict[str, PodLoad]]
    matched: int = 0
    unmatched: int = 0


def map_group(
    answers: GroupAnswers,
    windows: Sequence[Window],
    end: datetime,
    mapper: SeriesMapper,
    index: JobIndex,
) -> GroupLoad:
    by_job = {w.job.id: w for w in windows}
    load = GroupLoad(pods={w.job.id: {} for w in windows})
    tagged = [(signal, s) for signal, series in answers.samples.items() for s in series]
    tagged += [(None, s) for s in answers.oom]
    for signal, series in tagged:
        ref = mapper.pod_ref(series.labels)
        job = index.resolve(ref) if ref is not None else None
        if job is None:
            load.unmatched += 1
            continue
        window = by_job.get(job.id)
        if window is None:
            continue  # a known job collected in another group, or not selected
        load.matched += 1
        pod = load.pods[job.id].setdefault(ref.pod, PodLoad(ref))
        if signal is None:
            add_kills(series, window.first, pod)
        else:
            add_values(signal, series, window.first, end, pod)
    return load


def add_values(signal: str, series: Series, first: datetime, end: datetime, pod: PodLoad) -> None:
    for ts, value in series.points:
        if first <= ts <= end:
            converted = to_brain_unit(signal, value)
            if signal == STEP_TIME_SIGNAL and not 0 < converted <= MAX_STEP_TIME_S:
                continue  # no step yet (0), or not a mini-batch time: the point goes without
            fields = pod.values.setdefault(ts, {})
            # One series per pod is the contract; keep the first if a template breaks it.
            fields.setdefault(signal, converted)


def add_kills(series: Series, first: datetime, pod: PodLoad) -> None:
    """A rise of the OOM-attributed restart count is a kill at that point."""
    container = series.labels.get("container", "")
    previous: float | None = None
    for ts, value in series.points:
        if previous is not None and value > previous and ts >= first:
            pod.kills.setdefault(ts, []).append(container)
        previous = value
