"""The simulated cluster side of a job: its pods, their load, speed, and OOM kills."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from brain.lab.simulation.scenarios import Scenario

# Seconds a relaunched or newly launched pod needs before it trains (scheduling, image
# pull, restoring the checkpoint): the restart cost of a migration.
RESTART_S = 60.0
# Relative standard deviation of each node's usage and of the measured speed.
USAGE_NOISE = 0.04
SPEED_NOISE = 0.03
# During a data-loading or checkpoint stall the pods use this share of their usual CPU
# (reading, writing), and make no steps.
STALLED_CPU_SHARE = 0.1


@dataclass
class SimNode:
    name: str
    role: str
    index: int
    cpu: float
    memory_mib: float
    gpu: float
    up_at: float  # simulated second from which the pod trains
    # A fixed per-pod bias (different hosts, different data shards).
    bias: float = 1.0
    # Mini-batches take this many times as long (a slow host); a fresh node resets it.
    slowdown: float = 1.0

    def running(self, t: float) -> bool:
        return t >= self.up_at


@dataclass(frozen=True)
class NodeLoad:
    node: SimNode
    cpu: float
    memory_mib: float
    gpu_util: float | None
    # A worker's mean mini-batch time over the tick, seconds (None: the PS, or no step).
    step_time_s: float | None = None


@dataclass(frozen=True)
class Tick:
    """What happened during one step of simulated time."""

    t: float
    steps_per_sec: float
    global_step: int
    workers: int
    loads: list[NodeLoad]
    oom_killed: list[SimNode]
    # PS that died (a ps_down stall) and came back during the tick.
    failed: list[SimNode] = field(default_factory=list)
    recovered: list[SimNode] = field(default_factory=list)


@dataclass
class SimJob:
    """The pods of one job and the model that says how fast they train."""

    scenario: Scenario
    uid: str
    rng: np.random.Generator
    # The step times' noise, a stream of its own so it leaves every other draw as it was.
    step_rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))
    nodes: dict[str, SimNode] = field(default_factory=dict)
    global_step: float = 0.0
    # When the scenario's slow worker turns slow (None: never), and when it did.
    slow_at: float | None = None
    slowed_at: float | None = None
    slowed_node: str | None = None
    # ps_down stalls begun: stall index -> the PS that died (None once it is back).
    _down: dict[int, str | None] = field(default_factory=dict)

    # Pods -----------------------------------------------------------------------------

    def node_name(self, role: str, index: int) -> str:
        return f"{self.uid}-edljob-{role}-{index}"

    def of_role(self, role: str) -> list[SimNode]:
        return sorted((n for n in self.nodes.values() if n.role == role), key=lambda n: n.index)

    def launch(
        self, role: str, cpu: float, memory_mib: float, gpu: float, t: float, restart_s: float
    ) -> SimNode:
        index = max((n.index for n in self.of_role(role)), default=-1) + 1
        node = SimNode(
            self.node_name(role, index),
            role,
            index,
            cpu,
            memory_mib,
            gpu,
            up_at=t + restart_s,
            bias=float(self.rng.normal(1.0, USAGE_NOISE)),
        )
        self.nodes[node.name] = node
        return node

    def relaunch(self, node: SimNode, t: float, **size: float) -> None:
        for attr, value in size.items():
            setattr(node, attr, value)
        node.up_at = t + RESTART_S
        node.slowdown = 1.0  # on a fresh node

    def remove(self, node: SimNode) -> None:
        del self.nodes[node.name]

    def requested(self) -> tuple[float, float, float]:
        """Cores, MiB and GPUs requested by every pod, starting ones included."""
        pods = list(self.nodes.values())
        return (
            sum(n.cpu for n in pods),
            sum(n.memory_mib for n in pods),
            sum(n.gpu for n in pods),
        )

    # Time -----------------------------------------------------------------------------

    def advance(self, t: float, dt: float) -> Tick:
        """Train from ``t - dt`` to ``t``; report load, speed and OOM kills at ``t``."""
        s = self.scenario
        model = s.throughput_at(self.global_step)
        if self.slow_at is not None and self.slowed_at is None and t >= self.slow_at:
            self._slow_down(t)
        failed, recovered = self._ps_down(t)
        workers = [n for n in self.of_role("worker") if n.running(t)]
        ps = self.of_role("ps")
        ps_up = all(n.running(t) for n in ps)
        shares = s.ps_shares([n.index for n in ps])
        slowdowns = [n.slowdown for n in workers]
        job = model.load([n.cpu for n in workers], [n.cpu for n in ps], shares, slowdowns)
        speed, idle = job.steps_per_sec, 1.0
        if s.strategy == "ps" and not (ps and ps_up):
            speed, idle = 0.0, 0.0  # training waits for every PS
        elif any(st.active(t) for st in s.stalls if st.kind != "ps_down"):
            speed, idle = 0.0, STALLED_CPU_SHARE
        measured = max(speed * float(self.rng.normal(1.0, SPEED_NOISE)), 0.0)
        self.global_step += speed * dt

        loads, killed = [], []
        scale = 1.0 if speed > 0 else 0.0
        pace = job.pace * scale
        for node, cpu, rate in zip(workers, job.worker_cpu, job.worker_steps_per_sec, strict=True):
            load = self._load(node, cpu * (scale or idle), s.memory.worker_mib, pace)
            step_time = (
                1 / (rate * scale) * float(self.step_rng.normal(1.0, SPEED_NOISE))
                if rate * scale > 0
                else None
            )
            loads.append(replace(load, step_time_s=step_time))
        if ps_up:
            for node, share, cpu in zip(ps, shares, job.ps_cpu, strict=True):
                memory = s.memory.ps_node(self.global_step, share)
                loads.append(self._load(node, cpu * (scale or idle), memory, None))
        for load in loads:
            if load.memory_mib > load.node.memory_mib:
                killed.append(load.node)
                self.relaunch(load.node, t)
        return Tick(
            t=t,
            steps_per_sec=measured,
            global_step=int(self.global_step),
            workers=len(workers),
            loads=[ld for ld in loads if ld.node not in killed],
            oom_killed=killed,
            failed=failed,
            recovered=recovered,
        )

    def _ps_down(self, t: float) -> tuple[list[SimNode], list[SimNode]]:
        """``ps_down`` stalls: PS 0 dies at the start and is back at the end (unless a
        plan relaunched it sooner)."""
        failed, recovered = [], []
        for i, stall in enumerate(self.scenario.stalls):
            if stall.kind != "ps_down" or t < stall.start_s:
                continue
            if i not in self._down:
                node = next(iter(self.of_role("ps")), None)
                self._down[i] = None if node is None else node.name
                if node is not None:
                    node.up_at = max(node.up_at, stall.start_s + stall.duration_s)
                    failed.append(node)
            elif self._down[i] is not None and not stall.active(t):
                node = self.nodes.get(self._down[i])
                self._down[i] = None
                if node is not None:
                    recovered.append(node)
        return failed, recovered

    def _slow_down(self, t: float) -> None:
        """The scenario's slow worker's host turns slow (if that worker runs)."""
        slow = self.scenario.slow_worker
        node = next((n for n in self.of_role("worker") if n.index == slow.index), None)
        if node is not None:
            node.slowdown = slow.factor
            self.slowed_at, self.slowed_node = t, node.name

    def _load(self, node: SimNode, cpu: float, memory_mib: float, pace: float | None) -> NodeLoad:
        noise = float(self.rng.normal(1.0, USAGE_NOISE))
        used_cpu = min(max(cpu * node.bias * noise, 0.0), node.cpu)
        used_memory = memory_mib * (1 + (node.bias - 1) / 4)
        gpu_util = None if not node.gpu or pace is None else min(0.95 * pace, 1.0)
        return NodeLoad(node, used_cpu, used_memory, gpu_util)
