"""The named scenarios of ``brain simulate``: a job, its limits and how it behaves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from brain.lab.simulation.model import (
    BETA_ALLREDUCE_V100,
    BETA_PS_NCF,
    MemoryModel,
    ThroughputModel,
    normalized,
)

if TYPE_CHECKING:
    from brain.lab.simulation.families.base import FamilyModel


@dataclass(frozen=True)
class RoleStart:
    """What the user declared for a role."""

    count: int
    cpu: float
    memory_mib: float
    gpu: float = 0.0
    # Elastic bounds the role is registered with (None: none).
    min_count: int | None = None
    max_count: int | None = None


@dataclass(frozen=True)
class SlowWorker:
    """A worker's host turns slow: from ``after_s`` plus up to ``spread_s`` (drawn per
    seed, so the running stage's 5-minute cadence meets it at every phase), worker
    ``index`` takes ``factor`` x as long per mini-batch, until it moves to a fresh node."""

    factor: float
    index: int = 0
    after_s: float = 1800.0
    spread_s: float = 300.0


@dataclass(frozen=True)
class Stall:
    """Training stops for a while: ``data_loading`` (workers wait on input),
    ``checkpoint`` (everyone waits on a save) or ``ps_down`` (PS 0 dies and comes back
    ``duration_s`` later; the master reports it ``failed``, then ``running``)."""

    kind: str
    start_s: float
    duration_s: float

    def active(self, t: float) -> bool:
        return self.start_s <= t < self.start_s + self.duration_s


STALL_KINDS = ("data_loading", "checkpoint", "ps_down")


@dataclass(frozen=True)
class ClusterSqueeze:
    """The cluster around the job, pushed every minute as source ``simulator``: idle
    (``idle_free_cpu`` cores free, nothing pending) except from ``short_from_s`` to
    ``short_until_s``, when pending pods ask ``demand_cpu`` cores and only the cores the
    job gives back free any; once those cover the demand the pods are scheduled (nothing
    pending, nothing free)."""

    idle_free_cpu: float = 64.0
    short_from_s: float = 1200.0
    short_until_s: float = 2700.0
    demand_cpu: float = 12.0
    nodes: int = 10

    def short(self, t: float) -> bool:
        return self.short_from_s <= t < self.short_until_s

    def free_and_pending(self, t: float, returned_cpu: float) -> tuple[float, float]:
        """Free and pending cores at ``t``, ``returned_cpu`` cores given back since the
        short window began."""
        if not self.short(t):
            return self.idle_free_cpu, 0.0
        return max(returned_cpu - self.demand_cpu, 0.0), max(self.demand_cpu - returned_cpu, 0.0)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    roles: dict[str, RoleStart]
    # The optimizers' own form (the named scenarios) or a family written apart from it.
    throughput: ThroughputModel | FamilyModel
    memory: MemoryModel
    limit_cpu: float | None = None
    limit_memory_mib: float | None = None
    limit_gpu: float | None = None
    strategy: str = "ps"
    # Relative traffic of PS 0, 1, ...; PS beyond the list carry weight 1.
    ps_weights: tuple[float, ...] = ()
    # A hot shard: the share of all traffic (hot rows) that stays on the first PS however
    # many there are, on top of its even part of the rest (0: none). Unlike a weight,
    # more PS do not dilute it.
    hot_share: float = 0.0
    total_steps: int = 2_000_000
    horizon_s: float = 4 * 3600
    # Largest node the cluster schedules (Brain's defaults).
    node_max_cpu: float = 64
    node_max_memory_mib: float = 512 * 1024
    extra: dict[str, float] = field(default_factory=dict)
    slow_worker: SlowWorker | None = None
    # Relative growth of the PS cost per global step (sparse features whose embedding
    # tables grow): the PS need ``ps_cpu_per_step x (1 + growth x step)`` core-seconds.
    ps_cpu_growth_per_step: float = 0.0
    cluster: ClusterSqueeze | None = None
    # The throughput family a random job was drawn from (None: a named scenario).
    family: str | None = None
    stalls: tuple[Stall, ...] = ()

    def ps_weight(self, index: int) -> float:
        return self.ps_weights[index] if index < len(self.ps_weights) else 1.0

    def ps_shares(self, indices: Sequence[int]) -> list[float]:
        """The traffic share of each PS of these indices (the hot shard on the first)."""
        if not indices:
            return []
        shares = normalized([self.ps_weight(i) for i in indices])
        if not self.hot_share:
            return shares
        rest = [(1 - self.hot_share) * share for share in shares]
        return [rest[0] + self.hot_share, *rest[1:]]

    def throughput_at(self, global_step: float) -> ThroughputModel | FamilyModel:
        """The throughput model once the job has trained ``global_step`` steps."""
        if not self.ps_cpu_growth_per_step or not isinstance(self.throughput, ThroughputModel):
            return self.throughput
        growth = 1 + self.ps_cpu_growth_per_step * global_step
        return replace(self.throughput, ps_cpu_per_step=self.throughput.ps_cpu_per_step * growth)


# The PS scenarios' workers: 30 steps/s each alone, at the 4 cores each needs.
_PS_MODEL = ThroughputModel(
    per_worker_steps_per_sec=30.0, beta=BETA_PS_NCF, worker_cpu_needed=4.0, ps_cpu_per_step=0.04
)


def _ps_job(
    name: str,
    description: str,
    ps: RoleStart,
    worker: RoleStart,
    *,
    ps_base_mib: float,
    ps_cpu_per_step: float = _PS_MODEL.ps_cpu_per_step,
    ps_mib_per_step: float = 0.0,
    worker_mib: float = 3000,
    **rest,
) -> Scenario:
    """A PS job of the workers of ``_PS_MODEL``; what differs between scenarios is given."""
    return Scenario(
        name=name,
        description=description,
        roles={"ps": ps, "worker": worker},
        throughput=replace(_PS_MODEL, ps_cpu_per_step=ps_cpu_per_step),
        memory=MemoryModel(worker_mib, ps_base_mib, ps_mib_per_step),
        **rest,
    )


def _slow_worker(factor: float) -> Scenario:
    return _ps_job(
        f"slow-worker-{factor:g}x",
        f"2 PS and 6 workers under a 48-core limit; 30-35 minutes in, worker 0's host turns "
        f"{factor:g}x slower until the worker moves (slow_node's delay).",
        RoleStart(2, cpu=8, memory_mib=8192),
        RoleStart(6, cpu=4, memory_mib=8192),
        ps_base_mib=3000,
        limit_cpu=48,
        slow_worker=SlowWorker(factor),
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        _ps_job(
            "ps-steady",
            "The design's example: 1 PS and 1 worker under a 32-core limit; ~30 steps/s at the "
            "start.",
            RoleStart(1, cpu=2, memory_mib=4096),
            RoleStart(1, cpu=4, memory_mib=8192),
            ps_base_mib=1500,
            limit_cpu=32,
        ),
        _ps_job(
            "design-example",
            "The design's worked example with its numbers: a DeepFM job under a 15-core limit, "
            "registered as 1 PS and 1 worker of 8 cores (over the limit as registered); ~30 "
            "steps/s at the start, ~100 once Brain has added workers.",
            RoleStart(1, cpu=8, memory_mib=8192),
            RoleStart(1, cpu=8, memory_mib=8192),
            ps_base_mib=1500,
            limit_cpu=15,
            horizon_s=3600,
        ),
        _ps_job(
            "ps-growing-memory",
            "Sparse embeddings: PS memory grows with every step and outgrows its 4 GiB request "
            "after about 1.5 hours.",
            RoleStart(1, cpu=4, memory_mib=4096),
            RoleStart(1, cpu=4, memory_mib=8192),
            ps_base_mib=1500,
            ps_mib_per_step=0.005,
            limit_cpu=32,
            total_steps=1_000_000,
        ),
        _ps_job(
            "oom-storm",
            "Workers use 10 GiB, more than the 4 GiB they ask for: every worker is OOM-killed "
            "as soon as it starts.",
            RoleStart(2, cpu=4, memory_mib=8192),
            RoleStart(4, cpu=4, memory_mib=4096),
            ps_base_mib=3000,
            worker_mib=10240,
            limit_cpu=48,
        ),
        _ps_job(
            "hot-ps",
            "3 PS of 4 cores, PS 0 carries half the traffic (a hot embedding shard): it "
            "saturates while the others idle.",
            RoleStart(3, cpu=4, memory_mib=8192),
            RoleStart(6, cpu=4, memory_mib=8192),
            ps_base_mib=6000,
            ps_cpu_per_step=0.1,
            ps_weights=(2.0, 1.0, 1.0),
            limit_cpu=48,
        ),
        _ps_job(
            "limit-bound",
            "At its 20-core limit from the start (1 PS of 8 cores, 3 workers of 4): the PS is "
            "busy, nothing may grow past the limit.",
            RoleStart(1, cpu=8, memory_mib=8192),
            RoleStart(3, cpu=4, memory_mib=8192),
            ps_base_mib=3000,
            ps_cpu_per_step=0.12,
            limit_cpu=20,
        ),
        _ps_job(
            "ps-growing-load",
            "Growing sparse features (DeepRec): each step costs the PS more as the embedding "
            "tables grow (+100 % every 150,000 steps); within the hour the PS saturate and the "
            "workers wait on them.",
            RoleStart(1, cpu=4, memory_mib=8192),
            RoleStart(1, cpu=4, memory_mib=8192),
            ps_base_mib=3000,
            ps_cpu_growth_per_step=1 / 150_000,
            limit_cpu=48,
            horizon_s=3 * 3600,
        ),
        Scenario(
            name="gpu-allreduce",
            description="All-reduce on GPUs: 4 workers of 1 GPU under an 8-GPU limit; no PS.",
            strategy="allreduce",
            roles={"worker": RoleStart(4, cpu=8, memory_mib=32768, gpu=1)},
            throughput=ThroughputModel(
                per_worker_steps_per_sec=4.4, beta=BETA_ALLREDUCE_V100, worker_cpu_needed=6.0
            ),
            memory=MemoryModel(worker_mib=20000),
            limit_gpu=8,
            limit_cpu=80,
        ),
        _slow_worker(1.5),
        _slow_worker(2.0),
        _ps_job(
            "cluster-short",
            "2 PS and 6 elastic workers (min 2, max 8) under an 80-core limit; the cluster is "
            "idle but short of 12 cores from 20 to 45 minutes in.",
            RoleStart(2, cpu=8, memory_mib=8192),
            RoleStart(6, cpu=4, memory_mib=8192, min_count=2, max_count=8),
            ps_base_mib=3000,
            limit_cpu=80,
            cluster=ClusterSqueeze(),
            horizon_s=3600,
        ),
    )
}
