"""The figures of a replay through the loop, per recommender, over a set of runs.

Time-integrated, over every sample of the runs (a sample stands for its interval):

- ``slack``: 1 - used / allocated memory-hours (Autopilot's measure);
- ``memory_alloc_used``, ``core_alloc_used``: allocated / used memory-hours, core-hours;
- ``memory_saved``, ``cpu_saved``: 1 - allocated / requested (the request as given for
  the run's whole time) memory-hours, core-hours;
- ``ooms_per_1000h``: OOM kills per 1,000 run-hours; ``oom_run_share``: share of runs
  killed at least once; ``restarts_per_run``: OOM kills and migrations per run;
- ``lost_h``: hours of progress lost to restarts (re-run, and allocated, again);
- ``throttled_share``: share of run-hours with CPU used above its allocation.

Allocated hours include the re-run of lost progress at the size after the restart.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from brain.replay.harness import RunOutcome

COUNTED = tuple(f.name for f in fields(RunOutcome))


@dataclass
class Outcomes:
    """Every run's outcome under one recommender, as arrays indexed by run."""

    values: dict[str, np.ndarray]

    @classmethod
    def empty(cls, runs: int) -> Outcomes:
        return cls({name: np.zeros(runs) for name in COUNTED})

    def put(self, run: int, outcome: RunOutcome) -> None:
        for name in COUNTED:
            self.values[name][run] = getattr(outcome, name)


@dataclass(frozen=True)
class LoopFigures:
    runs: int
    run_hours: float
    memory_gib_h: float
    memory_used_gib_h: float
    memory_request_gib_h: float
    core_h: float
    cores_used_h: float
    core_request_h: float
    ooms: int
    runs_with_oom: int
    restarts: int
    lost_h: float
    throttled_h: float

    @property
    def slack(self) -> float | None:
        return _ratio(self.memory_gib_h - self.memory_used_gib_h, self.memory_gib_h)

    @property
    def memory_alloc_used(self) -> float | None:
        return _ratio(self.memory_gib_h, self.memory_used_gib_h)

    @property
    def core_alloc_used(self) -> float | None:
        return _ratio(self.core_h, self.cores_used_h)

    @property
    def memory_saved(self) -> float | None:
        share = _ratio(self.memory_gib_h, self.memory_request_gib_h)
        return None if share is None else 1.0 - share

    @property
    def cpu_saved(self) -> float | None:
        share = _ratio(self.core_h, self.core_request_h)
        return None if share is None else 1.0 - share

    @property
    def ooms_per_1000h(self) -> float | None:
        return _ratio(1000.0 * self.ooms, self.run_hours)

    @property
    def oom_run_share(self) -> float | None:
        return _ratio(self.runs_with_oom, self.runs)

    @property
    def restarts_per_run(self) -> float | None:
        return _ratio(self.restarts, self.runs)

    @property
    def throttled_share(self) -> float | None:
        return _ratio(self.throttled_h, self.run_hours)

    def as_dict(self) -> dict[str, float | int | None]:
        plain = {f.name: getattr(self, f.name) for f in fields(self)}
        derived = (
            "slack",
            "memory_alloc_used",
            "core_alloc_used",
            "memory_saved",
            "cpu_saved",
            "ooms_per_1000h",
            "oom_run_share",
            "restarts_per_run",
            "throttled_share",
        )
        return plain | {name: getattr(self, name) for name in derived}


def figures(
    outcomes: Outcomes, request_memory_mib: np.ndarray, request_cpu: np.ndarray, mask: np.ndarray
) -> LoopFigures:
    """The figures of the runs ``mask`` selects; requests per run (NaN: not given, the
    run's allocation stands in for it)."""
    v = {name: values[mask] for name, values in outcomes.values.items()}
    hours = v["hours"]
    memory_request = np.where(
        np.isnan(request_memory_mib[mask]),
        v["memory_gib_h"] * 1024.0,
        request_memory_mib[mask] * hours,
    )
    core_request = np.where(np.isnan(request_cpu[mask]), v["core_h"], request_cpu[mask] * hours)
    return LoopFigures(
        runs=int(mask.sum()),
        run_hours=float(hours.sum()),
        memory_gib_h=float(v["memory_gib_h"].sum()),
        memory_used_gib_h=float(v["memory_used_gib_h"].sum()),
        memory_request_gib_h=float(memory_request.sum() / 1024.0),
        core_h=float(v["core_h"].sum()),
        cores_used_h=float(v["cores_used_h"].sum()),
        core_request_h=float(core_request.sum()),
        ooms=int(v["ooms"].sum()),
        runs_with_oom=int(np.count_nonzero(v["ooms"])),
        restarts=int(v["ooms"].sum() + v["migrations"].sum()),
        lost_h=float(v["lost_h"].sum()),
        throttled_h=float(v["throttled_h"].sum()),
    )


def _ratio(a: float, b: float) -> float | None:
    return None if b <= 0 else a / b
