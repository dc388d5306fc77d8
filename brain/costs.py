"""Money: what resource-hours cost at the prices a site sets (per core-hour, per GiB-hour
of memory, per GPU-hour by GPU type). No price is set by default, and then nothing is
priced: Brain shows hours, never a made-up dollar figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

HOURS_PER_DAY = 24.0
MIB_PER_GIB = 1024.0


class HasHours(Protocol):
    """Resource-hours as ``brain.summaries.hours.Hours`` (or a summary row) carries them."""

    requested_core_hours: float
    used_core_hours: float
    requested_gib_hours: float
    used_gib_hours: float
    requested_gpu_hours: float
    used_gpu_hours: float


@dataclass(frozen=True)
class Cost:
    """Dollars of the priced resources (an unpriced one adds nothing)."""

    requested_usd: float
    used_usd: float

    @property
    def waste_usd(self) -> float:
        return self.requested_usd - self.used_usd

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.requested_usd + other.requested_usd, self.used_usd + other.used_usd)


@dataclass(frozen=True)
class Prices:
    core_hour_usd: float | None = None
    gib_hour_usd: float | None = None
    # For GPU types not in ``gpu_hour_usd_by_type`` (and jobs without a type).
    gpu_hour_usd: float | None = None
    gpu_hour_usd_by_type: tuple[tuple[str, float], ...] = ()

    @property
    def configured(self) -> bool:
        return any(
            p is not None for p in (self.core_hour_usd, self.gib_hour_usd, self.gpu_hour_usd)
        ) or bool(self.gpu_hour_usd_by_type)

    def gpu_price(self, gpu_type: str | None) -> float | None:
        return dict(self.gpu_hour_usd_by_type).get(gpu_type or "", self.gpu_hour_usd)

    def of(self, hours: HasHours, gpu_type: str | None) -> Cost:
        """What these hours cost, GPUs at the price of ``gpu_type``."""
        pairs = (
            (self.core_hour_usd, hours.requested_core_hours, hours.used_core_hours),
            (self.gib_hour_usd, hours.requested_gib_hours, hours.used_gib_hours),
            (self.gpu_price(gpu_type), hours.requested_gpu_hours, hours.used_gpu_hours),
        )
        return Cost(
            requested_usd=sum(price * req for price, req, _ in pairs if price is not None),
            used_usd=sum(price * used for price, _, used in pairs if price is not None),
        )

    def per_day(self, cpu: float, memory_mib: float, gpu: float, gpu_type: str | None) -> float:
        """Dollars a day of holding this allocation (cores, MiB, GPUs)."""
        pairs = (
            (self.core_hour_usd, cpu),
            (self.gib_hour_usd, memory_mib / MIB_PER_GIB),
            (self.gpu_price(gpu_type), gpu),
        )
        return sum(price * amount for price, amount in pairs if price is not None) * HOURS_PER_DAY
