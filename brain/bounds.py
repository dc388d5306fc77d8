"""What input Brain accepts: the column limits, and plausible physical quantities.

Column limits are fixed by the store (PostgreSQL ``integer`` and ``bigint``). The
plausible bounds are settings (a site with bigger machines raises them) but never
above the hard ceilings here, which keep every sum and mean over stored values finite.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

INT32_MAX = 2**31 - 1  # PostgreSQL integer: node index, workers, plan and event ids
# Roles one job may declare (ps, worker, chief, evaluator, ... with room to spare): every
# plan, listing and optimizer pass is per role, so their number bounds all of those.
MAX_ROLES = 16
# The largest answer a list endpoint gives at once; a page stops early rather than
# exceed it (its cursor or ids page on from there).
MAX_PAGE_BYTES = 1024 * 1024
INT64_MAX = 2**63 - 1  # PostgreSQL bigint: global_step, total_steps

# Hard ceilings per node (the schema states them; settings stay below them).
CEILING_CPU = 1e6
CEILING_MEMORY_MIB = 1e9
CEILING_GPU = 1e4
CEILING_STEPS_PER_SEC = 1e9
CEILING_NODES = 10_000_000
# Longest mean mini-batch time a node may report (pushed or scraped), seconds.
MAX_STEP_TIME_S = 3600.0

DEFAULT_MIN_TIMESTAMP = datetime(2000, 1, 1, tzinfo=UTC)
# The longest run history believes by default (BRAIN_HISTORY_MAX_RUN_DAYS).
DEFAULT_MAX_RUN_DAYS = 60.0
# The longest it may be set to: no setting believes a longer run.
LONGEST_MAX_RUN_DAYS = 3650.0


@dataclass(frozen=True)
class InputBounds:
    """The largest plausible values of one node (and node count per job), and the
    earliest timestamp accepted. A job's limits may reach ``nodes`` times a node's."""

    cpu: float = 1024
    memory_mib: float = 16 * 1024 * 1024
    gpu: float = 64
    steps_per_sec: float = 1e6
    nodes: int = 100_000
    min_timestamp: datetime = DEFAULT_MIN_TIMESTAMP
