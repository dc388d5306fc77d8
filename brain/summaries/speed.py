"""Training speed of a job, and how it changed around each applied plan."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import Any

import numpy as np
from sqlalchemy import select

from brain.db.engine import ReadSession
from brain.db.models import ScalePlanRow, SpeedSampleRow
from brain.domain import PlanStatus, as_utc


@dataclass(frozen=True)
class Speed:
    """A job's speed samples, oldest first: epoch seconds, steps/s and workers."""

    seconds: np.ndarray
    steps_per_sec: np.ndarray
    workers: np.ndarray

    @property
    def empty(self) -> bool:
        return len(self.seconds) == 0

    def span(self) -> list[datetime]:
        """First and last sample time (empty without samples)."""
        if self.empty:
            return []
        return [datetime.fromtimestamp(s, UTC) for s in (self.seconds[0], self.seconds[-1])]

    def between(self, start: datetime | None, end: datetime | None) -> Speed:
        """The samples in [start, end); ``None`` leaves that side open."""
        keep = np.ones(len(self.seconds), dtype=bool)
        if start is not None:
            keep &= self.seconds >= start.timestamp()
        if end is not None:
            keep &= self.seconds < end.timestamp()
        return Speed(self.seconds[keep], self.steps_per_sec[keep], self.workers[keep])


@dataclass(frozen=True)
class SpeedStats:
    """``mean_steps_per_s`` over the speed samples; ``per_worker_mean_steps_per_s`` the
    mean of steps/s divided by the workers of each sample (samples with workers)."""

    mean_steps_per_s: float | None
    per_worker_mean_steps_per_s: float | None


def load_speeds(session: ReadSession, job_ids: list[int]) -> dict[int, Speed]:
    """Each job's speed samples, oldest first (empty for a job without any)."""
    rows = session.execute(
        select(SpeedSampleRow.job_id, SpeedSampleRow.ts)
        .add_columns(SpeedSampleRow.steps_per_sec, SpeedSampleRow.workers)
        .where(SpeedSampleRow.job_id.in_(job_ids))
        .order_by(SpeedSampleRow.job_id, SpeedSampleRow.ts)
    ).all()
    by_job = {job_id: list(group) for job_id, group in groupby(rows, key=lambda r: r.job_id)}
    return {job_id: _speed_of(by_job.get(job_id, [])) for job_id in job_ids}


def _speed_of(rows: list) -> Speed:
    return Speed(
        seconds=np.array([as_utc(r.ts).timestamp() for r in rows], dtype=float),
        steps_per_sec=np.array([r.steps_per_sec for r in rows], dtype=float),
        workers=np.array([r.workers for r in rows], dtype=float),
    )


def speed_stats(speed: Speed) -> SpeedStats:
    if speed.empty:
        return SpeedStats(None, None)
    with_workers = speed.workers > 0
    per_worker = speed.steps_per_sec[with_workers] / speed.workers[with_workers]
    return SpeedStats(
        mean_steps_per_s=float(speed.steps_per_sec.mean()),
        per_worker_mean_steps_per_s=float(per_worker.mean()) if per_worker.size else None,
    )


def plan_effects(session: ReadSession, speeds: dict[int, Speed]) -> dict[int, list[dict[str, Any]]]:
    """Per job (id -> its speed), each applied plan with the speed before and after it.

    A plan counts as applied at its last update (when its status became ``applied``).
    "Before" is the speed since the previous applied plan (or the start), "after" the
    speed until the next one (or the end): each figure is one configuration's speed.
    """
    plans = session.scalars(
        select(ScalePlanRow)
        .where(
            ScalePlanRow.job_id.in_(list(speeds)),
            ScalePlanRow.status == PlanStatus.applied.value,
        )
        .order_by(ScalePlanRow.job_id, ScalePlanRow.updated_at, ScalePlanRow.id)
    ).all()
    by_job = {job_id: list(group) for job_id, group in groupby(plans, key=lambda p: p.job_id)}
    return {job_id: _effects(by_job.get(job_id, []), speed) for job_id, speed in speeds.items()}


def _effects(plans: list[ScalePlanRow], speed: Speed) -> list[dict[str, Any]]:
    times = [as_utc(p.updated_at) for p in plans]
    effects = []
    for i, plan in enumerate(plans):
        before = speed_stats(speed.between(times[i - 1] if i else None, times[i]))
        after = speed_stats(speed.between(times[i], times[i + 1] if i + 1 < len(times) else None))
        effects.append(
            {
                "plan_id": plan.id,
                "stage": plan.stage,
                "optimizers": list(plan.body.optimizers),
                "applied_at": times[i].isoformat(),
                "speed_before_steps_per_s": before.mean_steps_per_s,
                "speed_after_steps_per_s": after.mean_steps_per_s,
                "per_worker_before_steps_per_s": before.per_worker_mean_steps_per_s,
                "per_worker_after_steps_per_s": after.per_worker_mean_steps_per_s,
            }
        )
    return effects
