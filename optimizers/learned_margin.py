"""Sizing of a new run from its own workload's earlier runs, with a margin it learns.

Per resource and role, the earlier runs' peaks (memory: peak memory; CPU: peak CPU;
GPU: peak GPU memory; per run the role's largest node) give, oldest first:

- the *envelope*: the largest peak of the last ``window`` runs, but at least
  ``floor`` x the largest peak ever seen. A spike from weeks ago counts less than
  last week's, yet a workload that once spiked is not trusted to stay low. Below
  ``safety`` 1 the envelope is a lower quantile of those peaks instead of their
  largest: ``quantile`` at safety 0, rising linearly to the largest at safety 1
  (linear interpolation between sorted peaks). When little room is wanted, a
  typical recent peak times a small margin wastes less than the largest one;
- the *factor*: ``margin + early_margin / sqrt(runs)`` (thin histories are less
  certain) plus a *bump*: ``bump`` for every earlier run that this same rule,
  replayed on the runs before it, would have under-provisioned, fading by
  ``bump_fade`` per run that fitted. A workload that outgrew its sizing gets more
  room; a steady one keeps the base margin;
- the size: ``envelope x factor + headroom``. The absolute headroom costs little on
  large runs and covers small, jumpy ones, which a pure factor cannot do cheaply.

CPU is sized from peak CPU but judged (for the bump) on its 95th percentile: a few
seconds above the size is not throttling worth a bump. ``safety`` scales every
margin above 1 and every headroom, and below 1 it also lowers the envelope's
quantile: one knob to trade under-provisioning against allocation. Memory is capped
by the request as given: the owner's request is a ceiling it chose, and exceeding it
is rare. CPU is not capped: using more CPU than requested happens (throttled, not
killed). GPU memory becomes cards: a pod reports the memory of all its cards
(``gpu_memory_total_mib``), so one card holds that over its GPUs; the GPUs are never
fewer than the compute the runs kept busy at ``gpu_target_utilization`` nor than the
cards their peak filled, never more than the request or the GPU limit per node, and
whole GPUs unless ``gpu_step`` allows shares (``optimizers.gpu_sizing``).

A resource whose request changed by more than ``request_change`` since the previous
run gets no proposal (the request stands): the owner resized the job, and on the
reference data such runs outgrow their history seven times as often.

The defaults were chosen with ``brain backtest`` on the shared reference traces
(Bitbrains for memory and CPU, the Alibaba GenAI trace for GPU memory).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from brain.domain import Limits, Resources, RoleSpec, Stage
from brain.optimizing import (
    ANY_ROLE,
    Changes,
    ContextInput,
    HistoricalJob,
    OptimizerContext,
    Proposal,
)
from optimizers._common import ceil_mib, ceil_to, mean, no_change, reason
from optimizers.gpu_sizing import (
    GpuBounds,
    LearnedSizeSettings,
    compute_in_use,
    memory_in_cards,
    per_node_cap,
)

NAME = "learned_margin"
# Settings field of each resource's headroom (its unit is part of the name).
HEADROOM_FIELDS = {
    "memory": "memory_headroom_mib",
    "cpu": "cpu_headroom",
    "gpu_memory": "gpu_memory_headroom_mib",
}


# Evidence key of a role's reason when its memory is below the newest run's peak (MiB).
MEMORY_BELOW_PEAK = "memory_below_peak_mib"


def _margin(default: float, what: str) -> Any:
    return Field(default, ge=1.0, le=10.0, description=f"Base factor on the {what} envelope.")


def _early(default: float, what: str) -> Any:
    return Field(
        default,
        ge=0.0,
        le=10.0,
        description=f"Extra {what} factor for thin histories, divided by sqrt(earlier runs).",
    )


def _window(default: int, what: str) -> Any:
    return Field(
        default, ge=1, le=1000, description=f"Recent runs whose largest {what} peak counts in full."
    )


def _floor(default: float, what: str) -> Any:
    return Field(
        default,
        ge=0.0,
        le=1.0,
        description=f"Fraction of the largest {what} peak ever seen that the envelope keeps.",
    )


def _quantile(default: float, what: str) -> Any:
    return Field(
        default,
        ge=0.0,
        le=1.0,
        description=f"Quantile of the recent {what} peaks the envelope takes at safety 0; "
        "it rises linearly to their largest (1) at safety 1.",
    )


def _bump(default: float, what: str) -> Any:
    return Field(
        default,
        ge=0.0,
        le=5.0,
        description=f"Factor added per earlier run the {what} rule would have under-provisioned.",
    )


class LearnedMarginSettings(LearnedSizeSettings):
    safety: float = Field(
        1.0,
        ge=0.0,
        le=5.0,
        description="Scales every margin above 1 and every headroom; below 1 it also "
        "lowers the envelope from the largest recent peak toward a quantile of them.",
    )
    min_runs: int = Field(
        1, ge=1, le=50, description="Earlier runs a role needs before it gets a proposal."
    )
    max_runs: int = Field(60, ge=1, le=1000, description="Most recent earlier runs considered.")
    request_change: float = Field(
        0.05,
        ge=0.0,
        le=10.0,
        description="Relative change of a resource's request since the previous run above "
        "which its history is not trusted and it keeps its request.",
    )
    bump_fade: float = Field(
        0.8, ge=0.0, le=1.0, description="Per-run factor by which a bump fades while runs fit."
    )
    memory_margin: float = _margin(1.3, "memory")
    memory_early_margin: float = _early(1.0, "memory")
    memory_headroom_mib: float = Field(
        768, ge=0, le=65536, description="Memory (MiB) added on top of envelope x factor."
    )
    memory_window: int = _window(7, "memory")
    memory_floor: float = _floor(0.6, "memory")
    memory_quantile: float = _quantile(0.5, "memory")
    memory_bump: float = _bump(0.25, "memory")
    cap_memory_at_request: bool = Field(
        True, description="Never propose more memory than the job requests."
    )
    cpu_margin: float = _margin(1.0, "CPU")
    cpu_early_margin: float = _early(0.0, "CPU")
    cpu_headroom: float = Field(
        0.05, ge=0.0, le=64.0, description="CPU (cores) added on top of envelope x factor."
    )
    cpu_window: int = _window(7, "CPU")
    cpu_floor: float = _floor(0.0, "CPU")
    cpu_quantile: float = _quantile(0.25, "CPU")
    cpu_bump: float = _bump(0.1, "CPU")
    gpu_memory_margin: float = _margin(1.0, "GPU memory")
    gpu_memory_early_margin: float = _early(0.3, "GPU memory")
    gpu_memory_headroom_mib: float = Field(
        1536, ge=0, le=65536, description="GPU memory (MiB) added on top of envelope x factor."
    )
    gpu_memory_window: int = _window(2, "GPU memory")
    gpu_memory_floor: float = _floor(0.5, "GPU memory")
    gpu_memory_quantile: float = _quantile(0.5, "GPU memory")
    # GPU memory peaks jump often; bumping on every jump only inflates the share.
    gpu_memory_bump: float = _bump(0.0, "GPU memory")


@dataclass(frozen=True)
class Policy:
    """How one resource is sized; see the module docstring."""

    margin: float
    early_margin: float
    headroom: float
    window: int
    floor: float
    bump: float
    bump_fade: float
    safety: float = 1.0
    quantile: float = 1.0

    @property
    def level(self) -> float:
        """The quantile of the recent peaks the envelope takes at this safety."""
        return self.quantile + (1.0 - self.quantile) * min(self.safety, 1.0)

    def envelope(self, peaks: Sequence[float], runs: int, largest: float) -> float:
        """The envelope over the first ``runs`` peaks, whose largest is ``largest``."""
        recent = quantile(peaks[max(runs - self.window, 0) : runs], self.level)
        return max(recent, largest * self.floor)

    def factor(self, runs: int, bonus: float) -> float:
        extra = self.margin - 1.0 + self.early_margin / math.sqrt(runs) + bonus
        return 1.0 + self.safety * extra

    def size(self, envelope: float, runs: int, bonus: float) -> float:
        return envelope * self.factor(runs, bonus) + self.safety * self.headroom


def quantile(values: Sequence[float], level: float) -> float:
    """The ``level`` quantile of ``values`` (at least one), interpolating linearly."""
    if level >= 1.0:
        return max(values)
    ordered = sorted(values)
    position = level * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def resource_policy(settings: LearnedMarginSettings, resource: str) -> Policy:
    """The policy of ``resource`` (a ``HEADROOM_FIELDS`` key) from its prefixed settings."""
    prefix = f"{resource}_"
    return Policy(
        margin=getattr(settings, f"{prefix}margin"),
        early_margin=getattr(settings, f"{prefix}early_margin"),
        headroom=getattr(settings, HEADROOM_FIELDS[resource]),
        window=getattr(settings, f"{prefix}window"),
        floor=getattr(settings, f"{prefix}floor"),
        bump=getattr(settings, f"{prefix}bump"),
        bump_fade=settings.bump_fade,
        safety=settings.safety,
        quantile=getattr(settings, f"{prefix}quantile"),
    )


@dataclass(frozen=True)
class Sizing:
    value: float
    envelope: float
    factor: float
    misses: int


def size_from_peaks(
    peaks: Sequence[float], policy: Policy, fits: Sequence[float] | None = None
) -> Sizing:
    """The size for the next run from the earlier runs' peaks (oldest first, at least one).

    ``fits[j]`` is what run ``j``'s size had to cover; ``peaks`` when not given.
    """
    fits = peaks if fits is None else fits
    largest = peaks[0]
    bonus = 0.0
    misses = 0
    for runs in range(1, len(peaks)):
        # Would the rule, given only the runs before this one, have fitted it?
        earlier = policy.size(policy.envelope(peaks, runs, largest), runs, bonus)
        if fits[runs] > earlier:
            misses += 1
            bonus += policy.bump
        else:
            bonus *= policy.bump_fade
        largest = max(largest, peaks[runs])
    envelope = policy.envelope(peaks, len(peaks), largest)
    return Sizing(
        value=policy.size(envelope, len(peaks), bonus),
        envelope=envelope,
        factor=policy.factor(len(peaks), bonus),
        misses=misses,
    )


@dataclass
class RolePeaks:
    """Per earlier run of a role (oldest first), the peaks of its largest node."""

    memory_mib: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    cpu_p95: list[float] = field(default_factory=list)
    gpu_memory_mib: list[float] = field(default_factory=list)
    gpu_card_mib: float | None = None
    gpu_busy: list[float] = field(default_factory=list)  # GPUs kept busy (mean), per run
    gpu_memory_cards: list[float] = field(default_factory=list)  # cards the peak filled
    last_request: Resources | None = None


def role_peaks(history: Sequence[HistoricalJob], role: str) -> RolePeaks:
    """Peaks of ``role`` in ``history``, which is most recent first as the context holds it."""
    peaks = RolePeaks()
    runs = [nodes for past in reversed(history) if (nodes := past.role_nodes(role))]
    for nodes in runs:
        peaks.memory_mib.append(max(n.memory_max_mib for n in nodes))
        peaks.cpu.append(max(n.cpu_max for n in nodes))
        peaks.cpu_p95.append(max(n.cpu_p95 for n in nodes))
        on_gpu = [n for n in nodes if n.gpu_memory_max_mib is not None and n.gpu_memory_total_mib]
        if on_gpu:
            peaks.gpu_memory_mib.append(max(n.gpu_memory_max_mib for n in on_gpu))
            peaks.gpu_card_mib = max(n.gpu_card_mib for n in on_gpu)
            peaks.gpu_memory_cards.append(max(memory_in_cards(n) for n in on_gpu))
        busy = [b for n in nodes if (b := compute_in_use(n)) is not None]
        if busy:
            peaks.gpu_busy.append(max(busy))
    if runs:
        last = runs[-1]
        peaks.last_request = Resources(
            cpu=max(n.requested.cpu for n in last),
            memory_mib=max(n.requested.memory_mib for n in last),
            gpu=max(n.requested.gpu for n in last),
        )
    return peaks


class LearnedMarginOptimizer:
    """Sizes each role's memory, CPU and GPU share from its workload's earlier runs.

    Per resource: the largest peak of the recent runs (below safety 1 a lower
    quantile of them; never below a floor of the largest ever) times a factor that
    is wider on thin histories and bumped after every earlier run the rule would have
    under-provisioned, plus an absolute headroom. Memory is capped by the request as
    given; GPU memory becomes cards (at least the compute and memory the runs used,
    at most the request); a resource whose request just
    changed keeps it. ``safety`` moves the quantile (below 1) and scales all margins
    and headrooms at once.
    """

    name: ClassVar[str] = NAME
    stages: ClassVar[frozenset[Stage]] = frozenset({Stage.create})
    changes: ClassVar[Changes] = Changes(groups=frozenset({ANY_ROLE}))
    reads: ClassVar[frozenset[ContextInput]] = frozenset()
    # Last at create: it overrides the seed rules' memory and CPU wherever a role has
    # history (best by the out-of-time backtest; docs/optimizers.md).
    default_order: ClassVar[dict[Stage, int]] = {Stage.create: 90}
    Settings: ClassVar[type[LearnedMarginSettings]] = LearnedMarginSettings

    def propose(self, context: OptimizerContext, settings: LearnedMarginSettings) -> Proposal:
        job = context.job
        if not job.roles:
            return no_change(NAME, "the job declares no roles")
        history = context.history[: settings.max_runs]
        proposal = Proposal()
        for role, spec in job.roles.items():
            peaks = role_peaks(history, role)
            runs = len(peaks.memory_mib)
            if runs < settings.min_runs:
                proposal.reasons.append(
                    reason(
                        NAME,
                        f"history too thin for {role}: {runs} earlier runs, "
                        f"need {settings.min_runs}",
                        {"role": role, "runs": runs},
                        {"min_runs": settings.min_runs},
                    )
                )
                continue
            spec_out, evidence, notes = _size_role(peaks, spec, settings, job.limits)
            if spec_out != RoleSpec(count=spec.count):
                proposal.roles[role] = spec_out
            proposal.reasons.append(
                reason(
                    NAME,
                    f"{role} over {runs} runs: " + "; ".join(notes),
                    {"role": role, "runs": runs} | evidence,
                    {"safety": settings.safety, "request_change": settings.request_change},
                )
            )
        return proposal


def relative_change(before: float | None, now: float | None) -> float:
    """How much a request moved since the previous run (0 when either is unknown)."""
    if not before or not now:
        return 0.0
    return abs(now / before - 1.0)


def _size_role(
    peaks: RolePeaks, spec: RoleSpec, settings: LearnedMarginSettings, limits: Limits
) -> tuple[RoleSpec, dict[str, Any], list[str]]:
    """The role's sizes; a resource whose request the owner changed keeps its request."""
    last = peaks.last_request or Resources()
    evidence: dict[str, Any] = {}
    notes: list[str] = []

    def trusted(resource: str, before: float, now: float | None) -> bool:
        change = relative_change(before, now)
        # With a tolerance: a request this rule itself set 5 % above the last one (1.0 ->
        # 1.05 cores) is no resize by the owner.
        if change <= settings.request_change + 1e-9:
            return True
        # The owner resized the job: its past runs may no longer describe it.
        evidence[resource] = {"request_change": change}
        notes.append(f"{resource} request changed by {change:.0%} since the previous run, kept")
        return False

    def sized(resource: str, sizing: Sizing, value: float, unit: str) -> None:
        evidence[resource] = {
            "envelope": sizing.envelope,
            "factor": sizing.factor,
            "size": value,
            "misses": sizing.misses,
        }
        notes.append(
            f"{resource} envelope {sizing.envelope:.2f} x {sizing.factor:.2f} + headroom -> "
            f"{value:g} {unit} ({sizing.misses} earlier runs would not have fitted)"
        )

    def capped(resource: str, sizing: Sizing, cap: float, unit: str) -> None:
        """Said in plain words: the rule wanted more than the request, which is a ceiling."""
        wanted = ceil_mib(sizing.value)
        evidence[resource] = {
            "envelope": sizing.envelope,
            "factor": sizing.factor,
            "size": cap,
            "uncapped_size": wanted,
            "capped_at_request": cap,
            "misses": sizing.misses,
        }
        room = cap - sizing.envelope
        notes.append(
            f"{resource} capped at the request: the peak {sizing.envelope:.0f} {unit} x "
            f"{sizing.factor:.2f} + headroom calls for {wanted:g} {unit}, but the request "
            f"{cap:g} {unit} is the owner's ceiling (cap_memory_at_request), which leaves "
            f"{room:.0f} {unit} ({room / sizing.envelope:.0%}) above the peak; request more "
            "to get the margin"
        )

    # An untrusted resource keeps its request, stated, so that no earlier seed rule's
    # value replaces what the owner just chose (and a plan re-asked after this one was
    # applied says the same again).
    memory_mib, cpu = spec.memory_mib, spec.cpu
    gpu = None
    if trusted("memory", last.memory_mib, spec.memory_mib):
        sizing = size_from_peaks(peaks.memory_mib, resource_policy(settings, "memory"))
        cap = spec.memory_mib if settings.cap_memory_at_request else None
        if cap and ceil_mib(sizing.value) > cap:
            memory_mib = ceil_mib(cap)
            capped("memory", sizing, memory_mib, "MiB")
        else:
            memory_mib = ceil_mib(sizing.value)
            sized("memory", sizing, memory_mib, "MiB")
    newest_peak = peaks.memory_mib[-1]
    if memory_mib is not None and memory_mib < newest_peak:
        # The request's cap, or an envelope of runs mostly smaller than the newest: what
        # the newest run used no longer fits, which the plan must say.
        evidence[MEMORY_BELOW_PEAK] = newest_peak
        notes.append(
            f"memory {memory_mib:g} MiB is below the newest run's peak {newest_peak:.0f} MiB: "
            "it may be OOM-killed"
        )
    if trusted("cpu", last.cpu, spec.cpu):
        sizing = size_from_peaks(peaks.cpu, resource_policy(settings, "cpu"), fits=peaks.cpu_p95)
        cpu = ceil_to(sizing.value, settings.cpu_step)
        sized("cpu", sizing, cpu, "cores")
    on_gpu = peaks.gpu_memory_mib and peaks.gpu_card_mib
    if on_gpu and not trusted("gpu", last.gpu, spec.gpu):
        gpu = spec.gpu
    elif on_gpu:
        sizing = size_from_peaks(peaks.gpu_memory_mib, resource_policy(settings, "gpu_memory"))
        window = settings.gpu_memory_window
        bounds = GpuBounds(
            compute=mean(peaks.gpu_busy[-window:]) if peaks.gpu_busy else None,
            memory_cards=max(peaks.gpu_memory_cards[-window:]),
            target=settings.gpu_target_utilization,
            cap=per_node_cap(spec, limits),
        )
        gpu = bounds.size(sizing.value / peaks.gpu_card_mib, settings.gpu_step)
        sized("gpu", sizing, gpu, "GPUs")
        evidence["gpu"] |= bounds.evidence() | {"card_mib": peaks.gpu_card_mib}
        notes.append(
            f"GPU memory {sizing.value:.0f} MiB over {peaks.gpu_card_mib:.0f} MiB cards -> "
            + bounds.describe(gpu)
        )
    return RoleSpec(count=spec.count, cpu=cpu, memory_mib=memory_mib, gpu=gpu), evidence, notes
