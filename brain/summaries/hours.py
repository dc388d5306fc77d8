"""Resource-hours and what is derived from them: waste and efficiency.

How requested and used hours are counted is defined in ``brain.summaries.compute``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

# (resource, requested field, used field)
RESOURCES = (
    ("cpu", "requested_core_hours", "used_core_hours"),
    ("memory", "requested_gib_hours", "used_gib_hours"),
    ("gpu", "requested_gpu_hours", "used_gpu_hours"),
)


@dataclass(frozen=True)
class Hours:
    """Requested and used resource-hours, and event counts; adds up over nodes and jobs."""

    requested_core_hours: float = 0.0
    used_core_hours: float = 0.0
    requested_gib_hours: float = 0.0
    used_gib_hours: float = 0.0
    requested_gpu_hours: float = 0.0
    used_gpu_hours: float = 0.0
    oom_count: int = 0
    failure_count: int = 0

    @classmethod
    def of(cls, row: object) -> Hours:
        """The hours of anything carrying these fields (a summary row, a query row)."""
        return cls(**{f.name: getattr(row, f.name) or 0 for f in fields(cls)})

    def __add__(self, other: Hours) -> Hours:
        # Field by field, not over ``fields()``: pages add up hundreds of these.
        return Hours(
            self.requested_core_hours + other.requested_core_hours,
            self.used_core_hours + other.used_core_hours,
            self.requested_gib_hours + other.requested_gib_hours,
            self.used_gib_hours + other.used_gib_hours,
            self.requested_gpu_hours + other.requested_gpu_hours,
            self.used_gpu_hours + other.used_gpu_hours,
            self.oom_count + other.oom_count,
            self.failure_count + other.failure_count,
        )

    def columns(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in fields(Hours)}

    def waste(self, resource: str) -> float:
        """Requested − used hours of ``resource`` (cpu, memory or gpu)."""
        requested, used = self._pair(resource)
        return requested - used

    def efficiency(self, resource: str) -> float | None:
        """Used / requested hours of ``resource``; ``None`` when nothing was requested."""
        requested, used = self._pair(resource)
        return used / requested if requested > 0 else None

    def efficiency_score(self) -> float | None:
        """Mean efficiency over the resources requested, each capped at 1 (so bursting
        on one resource cannot hide waste of another); ``None`` if none was requested."""
        values = [min(e, 1.0) for r, *_ in RESOURCES if (e := self.efficiency(r)) is not None]
        return sum(values) / len(values) if values else None

    def _pair(self, resource: str) -> tuple[float, float]:
        for name, requested, used in RESOURCES:
            if name == resource:
                return getattr(self, requested), getattr(self, used)
        raise ValueError(f"unknown resource {resource!r}")
