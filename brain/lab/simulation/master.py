"""A job master driving Brain through the reference client, like DLRover's would.

It registers the job, asks for the ``create`` plan before any pod exists, pushes node
load and speed every minute, asks for ``estimate`` after a few minutes of training,
for ``running`` every few minutes and for ``oom`` after each OOM kill, and applies
every pending plan oldest first (relaunching migrated pods, with a restart cost),
reporting each one ``applied``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from brain.client import (
    BrainClient,
    ClusterStatePush,
    JobLimits,
    JobRegistration,
    NodeUsage,
    Plan,
    RoleRequest,
    SpeedPoint,
)
from brain.domain import PlanStatus, Stage
from brain.lab.simulation.cluster import RESTART_S, SimJob, SimNode, Tick
from brain.lab.simulation.scenarios import Scenario

TICK_S = 15.0  # one usage sample per pod per tick, like a 15 s scrape
PUSH_EVERY_S = 60.0
ESTIMATE_AFTER_S = 180.0  # the design: about 3 minutes of chief-only training
ESTIMATE_RETRY_S = 60.0
RUNNING_EVERY_S = 300.0  # DLRover's seconds_interval_to_optimize


@dataclass(frozen=True)
class AppliedPlan:
    t: float
    plan: Plan
    # Role -> (count before, count after) for roles whose count the plan changed.
    counts: dict[str, tuple[int, int]]
    # The plan changed a count or a CPU request (a sizing step, not only memory).
    sizing: bool = False
    # After it, some role's cpu_limit was below its cpu (a pod Kubernetes rejects).
    cpu_limit_below_cpu: bool = False


@dataclass(frozen=True)
class Sample:
    t: float
    steps_per_sec: float
    cpu: float
    memory_mib: float
    gpu: float
    workers: int
    ps: int
    # Worker pods, starting ones included (the role's count as the master runs it).
    worker_pods: int


@dataclass
class Run:
    """Everything the metrics need from one simulated job."""

    scenario: Scenario
    seed: int
    timeline: list[Sample] = field(default_factory=list)
    applied: list[AppliedPlan] = field(default_factory=list)
    oom_kills: int = 0
    # OOM kills of pods whose memory request Brain had set (not the user's ask), and
    # how many followed each optimizer's size (the one whose reason named it).
    oom_kills_after_brain_size: int = 0
    oom_kills_by_chooser: dict[str, int] = field(default_factory=dict)
    oom_plans: list[int] = field(default_factory=list)
    final_status: dict[int, PlanStatus] = field(default_factory=dict)
    foreign_roles: int = 0
    # The injected slow worker: when it turned slow and when a slow_node plan replaced
    # it; replacements slow_node asked for any other worker.
    slowed_at: float | None = None
    slow_replaced_at: float | None = None
    other_replacements: int = 0
    final_global_step: float = 0.0


class JobMaster:
    def __init__(
        self, client: BrainClient, scenario: Scenario, seed: int, start: datetime, uid: str
    ) -> None:
        self.client = client
        self.scenario = scenario
        self.start = start
        self.uid = uid
        self.job = SimJob(
            scenario, uid, np.random.default_rng(seed), step_rng=np.random.default_rng([seed, 2])
        )
        if scenario.slow_worker is not None:
            # Its own stream, so the injection leaves every other draw as it was.
            offset = np.random.default_rng([seed, 1]).uniform(0, scenario.slow_worker.spread_s)
            self.job.slow_at = scenario.slow_worker.after_s + float(offset)
        self.run = Run(scenario, seed)
        self._nodes: list[NodeUsage] = []
        self._speed: list[SpeedPoint] = []
        self._last_plan = 0  # the newest plan id read, for the long-poll walk
        # Cores the job requested when the cluster turned short (None: not short).
        self._cpu_when_short: float | None = None
        # What the master runs each role with now (the user's ask, then applied plans).
        self._desired: dict[str, RoleRequest] = {
            role: RoleRequest(count=r.count, cpu=r.cpu, memory_mib=r.memory_mib, gpu=r.gpu)
            for role, r in scenario.roles.items()
        }
        # The CPU limit plans set per role (None: none given; the pod's limit is its request).
        self._cpu_limit: dict[str, float | None] = dict.fromkeys(scenario.roles)
        # Who chose the memory a role's new pods get, and each pod's (None: the user).
        self._role_memory_by: dict[str, str | None] = dict.fromkeys(scenario.roles)
        self._memory_by: dict[str, str | None] = {}

    def ts(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    # The loop ------------------------------------------------------------------------

    def simulate(self, horizon_s: float) -> Run:
        self._register()
        self.client.optimize(self.uid, Stage.create)
        self._apply_pending(0.0, before_start=True)
        self._launch_declared()
        next_estimate, estimated = ESTIMATE_AFTER_S, False
        next_running = ESTIMATE_AFTER_S + RUNNING_EVERY_S
        t = 0.0
        while t < horizon_s:
            t += TICK_S
            if t % PUSH_EVERY_S == 0:
                self._push_cluster(t)
            tick = self.job.advance(t, TICK_S)
            self._record(tick)
            for node in tick.failed:
                self._on_ps_down(t, node)
            for node in tick.recovered:
                self._register_node(node)
            # The sizes they were killed at: one kill's fix may resize the others first.
            for node, memory_mib in [(n, n.memory_mib) for n in tick.oom_killed]:
                self._on_oom(t, node, memory_mib, self._memory_by.get(node.name))
            if not estimated and t >= next_estimate:
                self._flush()
                plan = self.client.optimize(self.uid, Stage.estimate)
                estimated = not plan.is_empty or not _waiting(plan)
                next_estimate = t + ESTIMATE_RETRY_S
                self._apply_pending(t)
            elif estimated and t >= next_running:
                self._flush()
                self.client.optimize(self.uid, Stage.running)
                self._apply_pending(t)
                next_running = t + RUNNING_EVERY_S
            if t % PUSH_EVERY_S == 0:
                self._flush()
        self._flush()
        # Finished, so a later run's cluster_shortage does not count on this job's workers.
        self.client.update_job(self.uid, status="stopped", finished_at=self.ts(horizon_s))
        self.run.final_global_step = self.job.global_step
        self.run.final_status = {p.id: p.status for p in self.client.plans(self.uid, limit=500)}
        self.run.slowed_at = self.job.slowed_at
        return self.run

    def _register(self) -> None:
        s = self.scenario
        roles = {
            role: self._desired[role].model_copy(
                update={"min_count": r.min_count, "max_count": r.max_count}
            )
            for role, r in s.roles.items()
        }
        self.client.register_job(
            self.uid,
            JobRegistration(
                name=f"sim-{s.name}",
                user="simulator",
                strategy=s.strategy,
                limits=JobLimits(cpu=s.limit_cpu, memory_mib=s.limit_memory_mib, gpu=s.limit_gpu),
                roles=roles,
                total_steps=s.total_steps,
                status="running",
                started_at=self.start,
            ),
        )

    def _launch_declared(self) -> None:
        for role, spec in self._desired.items():
            for _ in range(spec.count):
                node = self.job.launch(role, spec.cpu, spec.memory_mib, spec.gpu, 0.0, 0.0)
                self._memory_by[node.name] = self._role_memory_by[role]
                self._register_node(node)

    def _register_node(self, node: SimNode, status: str = "running") -> None:
        self.client.register_node(
            self.uid,
            node.name,
            role=node.role,
            index=node.index,
            cpu=node.cpu,
            memory_mib=node.memory_mib,
            gpu=node.gpu,
            status=status,
        )

    # Telemetry -----------------------------------------------------------------------

    def _record(self, tick: Tick) -> None:
        cpu, memory, gpu = self.job.requested()
        self.run.timeline.append(
            Sample(
                tick.t,
                tick.steps_per_sec,
                cpu,
                memory,
                gpu,
                tick.workers,
                len(self.job.of_role("ps")),
                len(self.job.of_role("worker")),
            )
        )
        ts = self.ts(tick.t)
        for load in tick.loads:
            self._nodes.append(
                NodeUsage(
                    name=load.node.name,
                    role=load.node.role,
                    index=load.node.index,
                    ts=ts,
                    cpu=round(load.cpu, 4),
                    memory_mib=round(load.memory_mib, 1),
                    gpu_util=None if load.gpu_util is None else round(load.gpu_util, 4),
                    step_time_s=None if load.step_time_s is None else round(load.step_time_s, 5),
                )
            )
        self._speed.append(
            SpeedPoint(
                ts=ts,
                global_step=tick.global_step,
                steps_per_sec=round(tick.steps_per_sec, 4),
                workers=tick.workers,
            )
        )

    def _push_cluster(self, t: float) -> None:
        """The platform's view of the cluster, as it would push it (``ClusterSqueeze``)."""
        squeeze = self.scenario.cluster
        if squeeze is None:
            return
        cpu = self.job.requested()[0]
        if not squeeze.short(t):
            self._cpu_when_short = None
        elif self._cpu_when_short is None:
            self._cpu_when_short = cpu
        returned = 0.0 if self._cpu_when_short is None else max(self._cpu_when_short - cpu, 0)
        free, pending = squeeze.free_and_pending(t, returned)
        self.client.push_cluster_state(
            ClusterStatePush(
                source="simulator",
                ts=self.ts(t),
                nodes=squeeze.nodes,
                free_cpu=free,
                pending_cpu=pending,
            )
        )

    def _flush(self) -> None:
        if self._nodes or self._speed:
            self.client.push_samples(self.uid, self._nodes, self._speed)
            self._nodes, self._speed = [], []

    def _on_ps_down(self, t: float, node: SimNode) -> None:
        self._flush()
        self.client.report_event(self.uid, "failed", self.ts(t), node=node.name)
        self._register_node(node, status="failed")

    def _on_oom(self, t: float, node: SimNode, memory_mib: float, chooser: str | None) -> None:
        self.run.oom_kills += 1
        if memory_mib != self.scenario.roles[node.role].memory_mib:
            self.run.oom_kills_after_brain_size += 1
            by = chooser or "unknown"
            self.run.oom_kills_by_chooser[by] = self.run.oom_kills_by_chooser.get(by, 0) + 1
        self._flush()
        self.client.report_event(self.uid, "oom", self.ts(t), node=node.name)
        plan = self.client.optimize(self.uid, Stage.oom, node=node.name)
        if not plan.is_empty:
            self.run.oom_plans.append(plan.id)
        self._apply_pending(t)

    # Plans ---------------------------------------------------------------------------

    def _apply_pending(self, t: float, before_start: bool = False) -> None:
        """Walk the long-poll from the last plan read: every plan not superseded, in order."""
        while plan := self.client.wait_for_plan(self.uid, after=self._last_plan, wait_s=0):
            self._last_plan = plan.id
            if plan.status != PlanStatus.proposed or plan.is_empty:
                continue
            self._note_replacements(plan, t)
            sizes = {role: (r.count, r.cpu) for role, r in self._desired.items()}
            counts = self._apply(plan, t, before_start)
            self.client.report(
                self.uid, plan.id, PlanStatus.applied, "applied by the simulator", self.ts(t)
            )
            sizing = any(
                (self._desired[role].count, self._desired[role].cpu) != size
                for role, size in sizes.items()
            ) or any(
                change.cpu is not None and change.cpu != self._desired[change.role].cpu
                for change in plan.migrate
                if change.role in self._desired
            )
            below = any(
                limit is not None and limit < self._desired[role].cpu - 1e-9
                for role, limit in self._cpu_limit.items()
            )
            self.run.applied.append(AppliedPlan(t, plan, counts, sizing, below))

    def _note_replacements(self, plan: Plan, t: float) -> None:
        """Workers slow_node had replaced: the injected one (once), or any other."""
        flagged = {r.evidence.get("node") for r in plan.reasons if r.optimizer == "slow_node"}
        for change in plan.migrate:
            if change.name not in flagged:
                continue
            if change.name == self.job.slowed_node and self.run.slow_replaced_at is None:
                self.run.slow_replaced_at = t
            else:
                self.run.other_replacements += 1

    def _apply(self, plan: Plan, t: float, before_start: bool) -> dict[str, tuple[int, int]]:
        counts: dict[str, tuple[int, int]] = {}
        for role, spec in plan.roles.items():
            if role not in self.scenario.roles:
                self.run.foreign_roles += 1  # a DLRover master has no such replica type
                continue
            desired = self._desired[role]
            if spec.cpu_limit is not None:
                self._cpu_limit[role] = spec.cpu_limit
            new = RoleRequest(
                count=desired.count if spec.count is None else spec.count,
                cpu=desired.cpu if spec.cpu is None else spec.cpu,
                memory_mib=desired.memory_mib if spec.memory_mib is None else spec.memory_mib,
                gpu=desired.gpu if spec.gpu is None else spec.gpu,
            )
            self._desired[role] = new
            if new.memory_mib != desired.memory_mib:
                self._role_memory_by[role] = _chooser(plan, new.memory_mib)
            if before_start:
                continue
            resized = (new.cpu, new.memory_mib, new.gpu) != (
                desired.cpu,
                desired.memory_mib,
                desired.gpu,
            )
            nodes = self.job.of_role(role)
            if resized:
                for node in nodes:
                    self.job.relaunch(node, t, cpu=new.cpu, memory_mib=new.memory_mib, gpu=new.gpu)
                    self._memory_by[node.name] = self._role_memory_by[role]
                    self._register_node(node)
            before = len(nodes)
            if new.count != before:
                counts[role] = (before, new.count)
            for _ in range(new.count - before):
                node = self.job.launch(role, new.cpu, new.memory_mib, new.gpu, t, RESTART_S)
                self._memory_by[node.name] = self._role_memory_by[role]
                self._register_node(node)
            for node in nodes[new.count :][::-1] if new.count < before else []:
                self.job.remove(node)
                self._register_node(node, status="removed")
        for change in plan.migrate:
            node = self.job.nodes.get(change.name or "")
            if node is None:
                continue
            size = {
                attr: getattr(change, attr)
                for attr in ("cpu", "memory_mib", "gpu")
                if getattr(change, attr) is not None
            }
            if change.memory_mib is not None and change.memory_mib != node.memory_mib:
                self._memory_by[node.name] = _chooser(plan, change.memory_mib)
            self.job.relaunch(node, t, **size)
            self._register_node(node)
        return counts


def _chooser(plan: Plan, memory_mib: float) -> str:
    """The optimizer that chose ``memory_mib`` in ``plan``: the last whose reason names
    that size (the guard's cuts follow the optimizers'), else the plan's stage."""
    sizes = {f"{memory_mib:.0f} MiB", f"{memory_mib:g} MiB"}
    for why in reversed(plan.reasons):
        if any(size in why.message for size in sizes):
            return why.optimizer
    return f"{plan.stage.value} plan"


def _waiting(plan: Plan) -> bool:
    """True when an empty estimate plan says it is not ready yet (``evidence.ready``)."""
    return any(r.evidence.get("ready") is False for r in plan.reasons)
