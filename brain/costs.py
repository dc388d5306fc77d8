"""Money: what resource-hours cost (per core-hour, per GiB-hour of memory, per GPU-hour by
GPU type), at the prices a site sets or else at a default table read from one public
on-demand price list (``DEFAULT_PRICE_SOURCE``), which every page showing dollars names."""

from __future__ import annotations

from dataclasses import dataclass, field
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


# Google Cloud's resource-based on-demand prices in us-central1 (Iowa): an N2 vCPU and a
# GiB of N2 memory are billed apart, so a core-hour and a GiB-hour need no splitting of a
# machine's price (4 x 0.031611 + 16 x 0.004237 = $0.1942 an hour, n2-standard-4's list
# price); GPUs are priced per attached GPU. L4 and H100 are left out: the figures found
# for them disagreed or came only inside whole machine types.
DEFAULT_PRICE_SOURCE = (
    "Google Cloud Compute Engine on-demand list prices, us-central1, read 2026-11-28"
)
DEFAULT_CORE_HOUR_USD = 0.031611  # N2 vCPU
DEFAULT_GIB_HOUR_USD = 0.004237  # N2 memory
# GPU types as job masters and GKE name them (case does not matter).
DEFAULT_GPU_HOUR_USD_BY_TYPE: tuple[tuple[str, float], ...] = (
    ("a100", 2.933908),  # A100 40GB
    ("nvidia-tesla-a100", 2.933908),
    ("nvidia-tesla-t4", 0.35),
    ("nvidia-tesla-v100", 2.48),
    ("t4", 0.35),
    ("v100", 2.48),
)
# The resources a ``Prices`` may price at the default table.
RESOURCES = ("cpu", "memory", "gpu")


@dataclass(frozen=True)
class Prices:
    core_hour_usd: float | None = None
    gib_hour_usd: float | None = None
    # For GPU types not in ``gpu_hour_usd_by_type`` (and jobs without a type).
    gpu_hour_usd: float | None = None
    gpu_hour_usd_by_type: tuple[tuple[str, float], ...] = ()
    # Which of RESOURCES are priced at the default table rather than by the site.
    defaults: frozenset[str] = field(default_factory=frozenset)

    @property
    def configured(self) -> bool:
        """Whether anything is priced (at the site's prices or the defaults)."""
        return any(
            p is not None for p in (self.core_hour_usd, self.gib_hour_usd, self.gpu_hour_usd)
        ) or bool(self.gpu_hour_usd_by_type)

    @property
    def label(self) -> str:
        """How a page names these prices: the site's, the defaults with their source, or
        both (which resources are at the defaults)."""
        if not self.defaults:
            return "the configured prices"
        default = f"default prices (source: {DEFAULT_PRICE_SOURCE})"
        if self.defaults >= set(RESOURCES):
            return default
        named = {"cpu": "CPU", "memory": "memory", "gpu": "GPUs"}
        which = " and ".join(named[r] for r in RESOURCES if r in self.defaults)
        return f"the configured prices, {default} for {which}"

    def gpu_price(self, gpu_type: str | None) -> float | None:
        by_type = {name.lower(): price for name, price in self.gpu_hour_usd_by_type}
        return by_type.get((gpu_type or "").lower(), self.gpu_hour_usd)

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
