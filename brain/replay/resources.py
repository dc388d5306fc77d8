"""The resources a backtest judges, and which columns of the run table hold them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is the backtest extra's; only its loaders need it
    import pandas as pd

# Memory of one GPU when a trace does not say (an 80 GiB card).
DEFAULT_GPU_MEMORY_MIB = 81920.0


@dataclass(frozen=True)
class Resource:
    """``peak`` is the usage a recommendation must cover; ``request`` the size as given."""

    name: str
    peak: str
    request: str
    unit: str
    meaning: str


MEMORY = Resource("memory", "mem_max", "req_memory_mib", "MiB", "peak memory above it: OOM-killed")
CPU = Resource("cpu", "cpu_p95", "req_cpu", "cores", "95th-percentile CPU above it: throttled")
GPU_MEMORY = Resource(
    "gpu_memory",
    "gpu_mem_mib_max",
    "req_gpu_memory_mib",
    "MiB",
    "peak GPU memory above the share of the card: out of GPU memory",
)
RESOURCES = (MEMORY, CPU, GPU_MEMORY)
BY_NAME = {r.name: r for r in RESOURCES}


def present(table: pd.DataFrame) -> list[Resource]:
    """The resources with any peak and request in ``table``, in ``RESOURCES`` order."""
    return [
        r
        for r in RESOURCES
        if r.peak in table
        and r.request in table
        and (table[r.peak].notna() & table[r.request].notna()).any()
    ]
