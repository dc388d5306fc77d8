"""The families' random jobs, their stalls, and the figures counted on constructed runs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from brain.client import Plan
from brain.domain import PlanStatus, Stage
from brain.lab.simulation.best import best_allocation
from brain.lab.simulation.cli import distribution_lines
from brain.lab.simulation.cluster import SimJob
from brain.lab.simulation.families.draw import FAMILIES, family_scenarios
from brain.lab.simulation.families.measured import MeasuredModel
from brain.lab.simulation.families.measured_curve import MeasuredCurve
from brain.lab.simulation.master import AppliedPlan, JobMaster, Run, Sample
from brain.lab.simulation.metrics import ScenarioResult, measure
from brain.lab.simulation.model import MemoryModel
from brain.lab.simulation.scenarios import RoleStart, Scenario, Stall

T0 = datetime(2026, 3, 1, tzinfo=UTC)
MODEL = MeasuredModel(
    MeasuredCurve("t", "t", 1, 0.5, 0.25),
    per_worker_steps_per_sec=10,
    worker_cpu_needed=2,
    ps_cpu_per_step=0.02,
)


def _job(**rest) -> Scenario:
    fields = {
        "name": "t",
        "description": "",
        "roles": {"ps": RoleStart(1, 2, 4096), "worker": RoleStart(1, 2, 4096)},
        "throughput": MODEL,
        "memory": MemoryModel(worker_mib=3000, ps_base_mib=1000, ps_node_overhead_mib=500),
        "limit_cpu": 40,
        "family": "measured",
    } | rest
    return Scenario(**fields)


def test_random_jobs_come_from_the_stated_ranges_and_repeat_with_the_seed():
    jobs = family_scenarios(300, seed=3)
    assert family_scenarios(6, seed=3) == jobs[:6]  # job i is the same whatever N
    assert family_scenarios(6, seed=4) != jobs[:6]
    assert [j.family for j in jobs[:6]] == [*FAMILIES, *FAMILIES]
    assert {type(j.throughput).__name__ for j in jobs} == {
        "MeasuredModel",
        "HotPsModel",
        "CommBoundModel",
    }
    for job in jobs:
        assert 8 <= job.limit_cpu <= 200
        assert 0.5 <= job.throughput.worker_cpu_needed <= 8
        assert job.strategy == "ps"
        for stall in job.stalls:
            # over before the last 10 minutes, where the reached speed is measured
            assert stall.start_s >= 600 and stall.start_s + stall.duration_s <= 3000
    oversized = [j for j in jobs if j.roles["worker"].count >= 12]
    assert all(j.roles["worker"].cpu == 8 for j in oversized)
    undersized = [j for j in jobs if j.roles["ps"].count == j.roles["worker"].count == 1]
    assert 0.2 < len(oversized) / len(jobs) < 0.4
    assert 0.2 < len(undersized) / len(jobs) < 0.45
    # some start with less memory than they need, per worker or per PS
    below = [
        j
        for j in jobs
        if j.roles["worker"].memory_mib < j.memory.worker_mib
        or j.roles["ps"].memory_mib < j.memory.ps_node(0, 1 / j.roles["ps"].count)
    ]
    assert 0.2 < len(below) / len(jobs) < 0.8
    assert {s.kind for j in jobs for s in j.stalls} == {"data_loading", "checkpoint", "ps_down"}
    assert any(j.memory.ps_mib_per_step > 0 for j in jobs)
    hot = [j for j in jobs if j.hot_share]
    assert all(0.1 <= j.hot_share <= 0.45 for j in hot)
    assert any(j.family == "hot-ps" for j in hot) and any(j.family != "hot-ps" for j in hot)
    assert family_scenarios(2, seed=3, family="hot-ps")[1].family == "hot-ps"
    with pytest.raises(ValueError, match="unknown family"):
        family_scenarios(1, seed=3, family="nope")


def _running_job(scenario: Scenario) -> SimJob:
    job = SimJob(scenario, "u", np.random.default_rng(0))
    for role, start in scenario.roles.items():
        for _ in range(start.count):
            job.launch(role, start.cpu, start.memory_mib, 0, 0.0, 0.0)
    return job


def test_a_data_loading_stall_stops_training_and_idles_the_workers():
    job = _running_job(_job(stalls=(Stall("data_loading", 60, 120),)))
    ticks = [job.advance(t, 15) for t in range(15, 301, 15)]
    speeds = {tick.t: tick.steps_per_sec for tick in ticks}
    assert speeds[45] > 0 and speeds[60] == 0 and speeds[165] == 0 and speeds[180] > 0
    stalled = next(tick for tick in ticks if tick.t == 90)
    worker = next(ld for ld in stalled.loads if ld.node.role == "worker")
    # a tenth of its 2 cores, noise aside; no mini-batch time while nothing trains
    assert worker.cpu == pytest.approx(0.2, rel=0.2)
    assert worker.step_time_s is None


def test_a_dead_ps_is_reported_failed_and_back():
    job = _running_job(_job(stalls=(Stall("ps_down", 60, 120),)))
    ticks = {t: job.advance(t, 15) for t in range(15, 301, 15)}
    assert [n.name for n in ticks[60].failed] == ["u-edljob-ps-0"]
    assert [n.name for n in ticks[180].recovered] == ["u-edljob-ps-0"]
    assert all(not tick.failed for t, tick in ticks.items() if t != 60)
    assert ticks[165].steps_per_sec == 0 and ticks[180].steps_per_sec > 0
    assert not [ld for ld in ticks[120].loads if ld.node.role == "ps"]  # a dead PS reports nothing


class ScriptedBrain:
    """A Brain answering each stage with its next scripted plan: roles, and reasons as
    ``(optimizer, message)`` pairs under ``"reasons"``."""

    def __init__(self, script: dict[Stage, list[dict]]) -> None:
        self.script = {stage: list(plans) for stage, plans in script.items()}
        self.stored: list[Plan] = []
        self.events: list[tuple[str, str | None]] = []
        self.statuses: list[tuple[str, str]] = []

    def optimize(self, uid: str, stage: Stage, node: str | None = None) -> Plan:
        plans = self.script.get(stage, [])
        roles = dict(plans.pop(0)) if plans else {}
        reasons = [
            {"optimizer": optimizer, "message": message}
            for optimizer, message in roles.pop("reasons", [])
        ]
        plan = Plan.model_validate(
            {
                "id": len(self.stored) + 1,
                "job_uid": uid,
                "stage": stage,
                "status": PlanStatus.proposed,
                "created_at": T0,
                "roles": roles,
                "reasons": reasons,
            }
        )
        if roles:
            self.stored.append(plan)
        return plan

    def wait_for_plan(self, uid: str, after: int, wait_s: float = 0) -> Plan | None:
        return next((p for p in self.stored if p.id > after), None)

    def report(self, uid, plan_id, status, message=None, applied_at=None) -> None:
        self.stored[plan_id - 1] = self.stored[plan_id - 1].model_copy(update={"status": status})

    def plans(self, uid: str, limit: int = 50) -> list[Plan]:
        return self.stored[::-1]

    def report_event(self, uid, kind, ts, node=None, detail=None) -> None:
        self.events.append((kind, node))

    def register_node(self, uid, name, *, status="running", **size) -> None:
        self.statuses.append((name, status))

    def register_job(self, *args, **kwargs) -> None: ...
    def push_samples(self, *args, **kwargs) -> None: ...
    def update_job(self, *args, **kwargs) -> None: ...
    def push_cluster_state(self, *args, **kwargs) -> None: ...


def test_the_master_counts_brains_oom_sizes_cpu_limits_and_sizing_plans():
    # The user asks 4096 MiB per worker (3000 needed) and 1024 for the PS (1500 needed).
    scenario = _job(
        roles={"ps": RoleStart(1, 2, 1024), "worker": RoleStart(1, 2, 4096)},
    )
    brain = ScriptedBrain(
        {
            # Brain cuts the worker to 2048 MiB before the start: killed at once (Brain's).
            Stage.create: [{"worker": {"memory_mib": 2048}}],
            # the same tick kills the PS at the user's 1024 MiB (not Brain's)
            Stage.oom: [{"worker": {"memory_mib": 4096}}, {"ps": {"memory_mib": 4096}}],
            # 3 workers of 4 cores with a 3-core limit: a pod Kubernetes rejects
            Stage.estimate: [{"worker": {"count": 3, "cpu": 4, "cpu_limit": 3}}],
            # 5 minutes later back to 2 workers (an oscillation), the limit mended
            Stage.running: [{"worker": {"count": 2, "cpu_limit": 4}}],
        }
    )
    run = JobMaster(brain, scenario, 0, T0, "u").simulate(600)
    assert run.oom_kills == 2
    assert run.oom_kills_after_brain_size == 1
    assert [(a.t, a.sizing, a.cpu_limit_below_cpu) for a in run.applied] == [
        (0.0, False, False),  # memory only
        (15.0, False, False),
        (15.0, False, False),
        (180.0, True, True),
        (480.0, True, False),
    ]
    assert run.oom_kills_by_chooser == {"create plan": 1}  # no reason names the size
    result = measure(run, 600)
    assert result.oom_kills_after_brain_size == 1
    assert result.oom_kills_by_chooser == {"create plan": 1}
    assert result.plans_cpu_limit_below_cpu == 1
    assert result.oscillations == 1
    assert result.oom_fixes_lost == 0


def test_kills_in_one_tick_count_at_the_size_each_was_killed_at():
    # Three workers ask 2048 MiB and need 3000: all three are killed in the first tick.
    # The first kill's fix gives the role 8192 MiB before the next kill is counted; the
    # other two were still killed at the user's ask, not at Brain's size.
    scenario = _job(roles={"ps": RoleStart(1, 2, 4096), "worker": RoleStart(3, 2, 2048)})
    brain = ScriptedBrain({Stage.oom: [{"worker": {"memory_mib": 8192}}]})
    run = JobMaster(brain, scenario, 0, T0, "u").simulate(60)
    assert run.oom_kills == 3
    assert run.oom_kills_after_brain_size == 0


def test_kills_after_brains_size_are_counted_by_the_optimizer_that_chose_it():
    # The estimate sizes the PS at 1200 MiB (it needs 1500) and the guard cuts the
    # workers to 2500 (they need 3000): the reasons naming each size say who chose it.
    scenario = _job(roles={"ps": RoleStart(1, 2, 4096), "worker": RoleStart(1, 2, 4096)})
    plan = {
        "ps": {"memory_mib": 1200},
        "worker": {"memory_mib": 2500},
        "reasons": [
            ("estimate", "1 PS of 2 cores and 1200 MiB"),
            ("estimate", "workers of 2 cores / 3000 MiB"),
            ("guard", "worker: memory 3000 -> 2500 MiB to fit the limit"),
        ],
    }
    brain = ScriptedBrain({Stage.estimate: [plan]})
    # applied at 180 s; the relaunched pods are up at 240 s and killed in that tick
    run = JobMaster(brain, scenario, 0, T0, "u").simulate(240)
    assert run.oom_kills_by_chooser == {"estimate": 1, "guard": 1}
    assert run.oom_kills_after_brain_size == 2
    result = _result(1.0, 1, oom_kills=2, oom_kills_after_brain_size=2)
    lines = distribution_lines(
        "measured", [result, replace(result, oom_kills_by_chooser=run.oom_kills_by_chooser)]
    )
    assert lines[4] == "  by the optimizer that chose the size: estimate 1, guard 1"


def test_plans_to_95pct_counts_sizing_plans_apart_on_a_constructed_run():
    scenario = _job()
    best = best_allocation(scenario).steps_per_sec
    # 0 until 300 s, then at the best: the 2-minute mean (8 samples) first reaches 95 %
    # at 300 + 8 x 15 = 420 s.
    timeline = [Sample(t, 0.0 if t <= 300 else best, 10, 0, 0, 2, 1, 2) for t in range(15, 901, 15)]
    plan = Plan.model_validate(
        {"id": 1, "job_uid": "u", "stage": "running", "status": "applied", "created_at": T0}
    )
    applied = [
        AppliedPlan(0.0, plan, {}, sizing=True),
        AppliedPlan(100.0, plan, {}, sizing=False),  # an OOM fix
        AppliedPlan(200.0, plan, {"worker": (2, 4)}, sizing=True),
        AppliedPlan(500.0, plan, {}, sizing=True),  # after the best was reached
    ]
    run = Run(scenario, 0, timeline=timeline, applied=applied)
    result = measure(run, 900)
    assert result.plans_to_95pct == 3
    assert result.sizing_plans_to_95pct == 2
    assert result.reached_steps_per_sec == pytest.approx(best, abs=0.01)
    assert result.family == "measured"


def _result(ratio: float, sizing_plans: int | None, **counts) -> ScenarioResult:
    fields = dict.fromkeys(ScenarioResult.__dataclass_fields__, 0) | {
        "oom_kills_by_chooser": {},
        "scenario": "x",
        "best_steps_per_sec": 100.0,
        "reached_steps_per_sec": 100.0 * ratio,
        "plans_to_95pct": sizing_plans,
        "sizing_plans_to_95pct": sizing_plans,
        "slow_node_delay_s": None,
        "workers_added_while_short": None,
        "family": "hot-ps",
    }
    return ScenarioResult(**(fields | counts))


def test_the_per_family_figures_of_constructed_results():
    results = [
        _result(1.0, 2),
        _result(0.9, 3, oom_kills=3, oom_kills_after_brain_size=2),
        _result(0.5, 4, plans_cpu_limit_below_cpu=1),
        _result(0.8, None, over_limit_seconds=30.0, oscillations=2, oom_fixes_lost=1),
        _result(0.96, 1, oom_kills=1),
    ]
    lines = distribution_lines("hot-ps", results)
    # sorted 0.5, 0.8, 0.9, 0.96, 1.0: median 0.9; 10th percentile 0.5 + 0.4 x 0.3 = 0.62
    assert lines[:3] == [
        "hot-ps: 5 random jobs",
        "reached/best: median 0.900, 10th percentile 0.620, min 0.500",
        "at 95 % of the best within 3 plans that change counts or CPU: 60% of the jobs",
    ]
    assert lines[3] == "OOM kills after a size Brain chose: 2 (4.0 per 10 jobs), of 4 OOM kills"
    assert lines[4:] == [
        "over_limit_seconds: total 30, in 1 of 5 jobs",
        "plans_cpu_limit_below_cpu: total 1, in 1 of 5 jobs",
        "oscillations: total 2, in 1 of 5 jobs",
        "oom_fixes_lost: total 1, in 1 of 5 jobs",
    ]
