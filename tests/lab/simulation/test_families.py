"""The throughput families' curves, the fitted table and the best search, by hand."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from brain.lab.simulation.best import _ps_tier_speed, best_allocation
from brain.lab.simulation.families.comm_bound import CommBoundModel
from brain.lab.simulation.families.hot_ps import HotPsModel
from brain.lab.simulation.families.measured import MeasuredModel
from brain.lab.simulation.families.measured_curve import MeasuredCurve, fit_curve, speed_errors
from brain.lab.simulation.families.measured_table import CURVES
from brain.lab.simulation.master import Run, Sample
from brain.lab.simulation.metrics import run_best
from brain.lab.simulation.model import MemoryModel
from brain.lab.simulation.scenarios import RoleStart, Scenario

POINTS = Path(__file__).parents[2] / "fixtures" / "measured_throughput_points.csv"

CURVE = MeasuredCurve("t", "t", 1, sync_fixed=0.5, sync_per_doubling=0.25)


def test_the_measured_curve_adds_a_fixed_and_a_per_doubling_sync_cost():
    assert CURVE.relative_step_time(1) == 1.0
    # 1 + 0.5 + 0.25 x log2(4) = 2: four workers go twice as fast as one
    assert CURVE.relative_step_time(4) == pytest.approx(2.0)
    assert CURVE.speedup(4) == pytest.approx(2.0)
    # between 1 and 2 the sync cost ramps in: 1 + 0.5 x (0.5 + 0.25 x 0.58496) = 1.32312
    assert CURVE.relative_step_time(1.5) == pytest.approx(1.323120, abs=1e-6)
    assert CURVE.speedup(1.5) == pytest.approx(1.5 / 1.323120, abs=1e-6)


def test_workers_past_the_largest_group_measured_add_nothing():
    curve = MeasuredCurve("t", "t", 1, 0.5, 0.25, max_workers=8)
    # 8 / (1 + 0.5 + 0.25 x 3) = 3.5556, and no more at 16
    assert curve.speedup(8) == pytest.approx(8 / 2.25)
    assert curve.speedup(16) == pytest.approx(8 / 2.25)


def test_the_measured_family_is_capped_by_a_linear_ps_tier():
    model = MeasuredModel(
        CURVE, per_worker_steps_per_sec=10, worker_cpu_needed=2, ps_cpu_per_step=0.02
    )
    # 4 workers: 10 x 2.0 = 20 steps/s; a 1-core PS serves 1 / 0.02 = 50
    assert model.speed([2] * 4, [1], [1.0]) == pytest.approx(20.0)
    # a 0.2-core PS serves 10: the workers run at half pace and use half their CPU
    load = model.load([2] * 4, [0.2], [1.0], [1.0] * 4)
    assert load.steps_per_sec == pytest.approx(10.0)
    assert load.worker_cpu == pytest.approx([1.0] * 4)
    assert load.worker_steps_per_sec == pytest.approx([2.5] * 4)
    assert load.ps_cpu == pytest.approx([0.2])
    # a worker at 1 of its 2 cores is half a worker: n = 3.5,
    # 1 + 0.5 + 0.25 x log2(3.5) = 1.95184, 10 x 3.5 / 1.95184 = 17.932
    assert model.speed([1, 2, 2, 2], [1], [1.0]) == pytest.approx(17.9318, abs=1e-4)


HOT = HotPsModel(
    per_worker_steps_per_sec=10,
    scaling_exponent=0.8,
    worker_cpu_needed=2,
    ps_cpu_per_step=0.1,
    ps_knee_cpu=2,
    ps_gain_past_knee=0.25,
)


def test_a_ps_past_its_knee_barely_gains_and_a_hot_shard_caps_the_job():
    # workers: 10 x 4^0.8 = 30.314
    assert HOT.uniform_speed(4, 1.0, 1) == pytest.approx(30.3143, abs=1e-4)
    # 3 cores = 2 + 0.25 x 1 = 2.25 effective; at half the traffic 2.25 / 0.05 = 45
    assert HOT.ps_rate(3, 0.5) == pytest.approx(45.0)
    assert HOT.ps_cpu_for(45, 0.5) == pytest.approx(3.0)
    assert HOT.ps_cpu_for(30, 0.5) == pytest.approx(1.5)  # below the knee: linear
    # PS 0 carries 2/3: 2.25 / (0.1 x 2/3) = 33.75 caps 6 workers' 10 x 6^0.8 = 41.93
    assert HOT.speed([2] * 6, [3, 3], [2 / 3, 1 / 3]) == pytest.approx(33.75)
    # twice its cores (6: 2 + 0.25 x 4 = 3 effective, 45 steps/s) lifts it a third
    assert HOT.speed([2] * 6, [6, 3], [2 / 3, 1 / 3]) == pytest.approx(41.9296, abs=1e-4)
    # a saturated PS uses all it has
    load = HOT.load([2] * 6, [3, 3], [2 / 3, 1 / 3], [1.0] * 6)
    assert load.ps_cpu[0] == pytest.approx(3.0)


COMM = CommBoundModel(
    per_worker_steps_per_sec=10,
    worker_cpu_needed=4,
    thread_serial=0.2,
    comm_s=0.01,
    contention_s=0.001,
    serial_fraction=0.05,
    ps_cpu_per_step=0.02,
)


def test_the_comm_bound_family_by_hand():
    # threads: at 2 of 4 cores a mini-batch takes 0.2 + 0.8 x 2 = 1.8 times as long
    assert COMM.worker_factor(2) == pytest.approx(1 / 1.8)
    assert COMM.worker_factor(8) == 1.0
    # 8 workers, 2 PS: x = 4, network 0.01 x 4 + 0.001 x 16 = 0.056 s; step 0.156 s;
    # raw 8 / 0.156 = 51.282 = 5.128 workers' worth; / (1 + 0.05 x 4.128) = 42.508
    assert COMM.comm_time_s(8, 2) == pytest.approx(0.056)
    assert COMM.uniform_speed(8, 1.0, 2) == pytest.approx(42.5080, abs=1e-4)
    assert COMM.speed([4] * 8, [10, 10], [0.5, 0.5]) == pytest.approx(42.5080, abs=1e-4)
    # they compute 0.1 of each 0.156 s
    assert COMM.worker_busy([1.0] * 8, 2) == pytest.approx([0.1 / 0.156] * 8)
    # 4 PS instead of 2, same CPU: x = 2, 0.024 s; 8 / 0.124 = 64.516; / 1.27258 = 50.697
    assert COMM.uniform_speed(8, 1.0, 4) == pytest.approx(50.6971, abs=1e-4)
    # with 1 PS the network fills: 8 workers 29.43 steps/s, 30 workers only 21.66
    assert COMM.uniform_speed(8, 1.0, 1) == pytest.approx(29.4334, abs=1e-4)
    assert COMM.uniform_speed(30, 1.0, 1) == pytest.approx(21.6606, abs=1e-4)


def test_uniform_speed_matches_the_per_worker_sum():
    for model in (
        MeasuredModel(CURVE, per_worker_steps_per_sec=7, worker_cpu_needed=3, ps_cpu_per_step=0.1),
        HOT,
        COMM,
    ):
        for workers, weight, ps in ((1, 1.0, 1), (5, 0.6, 2), (17, 0.9, 3)):
            assert model.uniform_speed(workers, weight, ps) == pytest.approx(
                sum(model.workers_speed([weight] * workers, ps))
            )


def _points() -> dict[tuple[str, str, int], list[tuple[int, float]]]:
    points: dict[tuple[str, str, int], list[tuple[int, float]]] = defaultdict(list)
    with POINTS.open() as f:
        for r in csv.DictReader(f):
            key = (r["source"], r["model"], int(r["batch"]))
            points[key].append((int(r["replicas"]), float(r["relative_step_time"])))
    return points


def test_fit_curve_recovers_a_curve_from_its_own_points():
    points = [(n, CURVE.relative_step_time(n)) for n in (1, 2, 4, 8, 16, 64)]
    assert fit_curve(points) == pytest.approx((0.5, 0.25))
    # falling step times are no curve: a group is never faster per replica than one alone
    assert fit_curve([(1, 1.0), (2, 1.5), (4, 1.2), (8, 1.1)])[1] == 0.0


def test_the_committed_table_is_the_fit_of_the_committed_points():
    points = _points()
    assert {c.key for c in CURVES} == {f"{s}/{m}/{b}" for s, m, b in points}
    for curve in CURVES:
        measured = points[(curve.source, curve.model, curve.batch)]
        fitted = fit_curve(measured)
        assert fitted == pytest.approx((curve.sync_fixed, curve.sync_per_doubling), abs=1e-5)
        assert curve.max_workers == max(n for n, _ in measured)


def test_the_fitted_table_reproduces_the_measured_speeds_within_its_stated_error():
    """docs/simulation.md states it: median 3.6 %, 90 % of the points within 13 %."""
    points = _points()
    errors = sorted(
        e for c in CURVES for e in speed_errors(c, points[(c.source, c.model, c.batch)])
    )
    assert len(errors) == 1133
    assert statistics.median(errors) <= 0.036
    assert errors[int(0.9 * len(errors))] <= 0.13


def _job(model, limit_cpu: float, hot_share: float = 0.0) -> Scenario:
    return Scenario(
        name="t",
        description="",
        roles={"ps": RoleStart(1, 2, 4096), "worker": RoleStart(1, 2, 4096)},
        throughput=model,
        memory=MemoryModel(worker_mib=1000),
        limit_cpu=limit_cpu,
        hot_share=hot_share,
        family=model.family,
    )


def test_the_best_search_spreads_a_saturating_tier_over_enough_ps():
    model = HotPsModel(
        per_worker_steps_per_sec=10,
        scaling_exponent=1.0,
        worker_cpu_needed=1,
        ps_cpu_per_step=0.1,
        ps_knee_cpu=2,
        ps_gain_past_knee=0.1,
    )
    # Each effective worker (1 core) makes 10 steps/s and costs the PS 1 core below the
    # knee: 20 cores give 10 workers and 10 PS cores, 100 steps/s, if no PS passes its
    # 2-core knee: 5 PS or more. Fewer workers are slower; 4 PS serve at most
    # 4 x (2 + 0.1 x 0.5) / 0.1 = 82 on the 10 cores left.
    assert _ps_tier_speed(model, [0.25] * 4, 100.0, 10.0, 64) == pytest.approx(82.0)
    best = best_allocation(_job(model, 20))
    assert (best.workers, best.worker_cpu, best.ps) == (10, 1, 5)
    assert best.steps_per_sec == pytest.approx(100.0)
    assert best.cores == pytest.approx(20.0)

    # PS kept at most 80 % busy cost 1 / 0.8 = 1.25 cores per effective worker: w worker
    # cores run min(10 w, 10 x 0.8 x (20 - w)) steps/s, equal at w = 8.89, which no
    # worker size reaches. w = 9 leaves the PS 11 cores: 88 steps/s in 20 cores; 11
    # workers of 0.8 (w = 8.8) run 88 too, their PS needing 8.8 / 0.8 = 11 cores: 19.8
    # cores, fewer on the tie. 5 PS use 1.76 cores each, below the knee; 4 would be past it.
    kept = best_allocation(_job(model, 20), ps_busy=0.8)
    assert (kept.workers, kept.worker_cpu, kept.ps) == (11, 0.8, 5)
    assert kept.steps_per_sec == pytest.approx(88.0)
    assert kept.cores == pytest.approx(19.8)


def test_a_hot_shard_stays_on_the_first_ps_however_many_there_are():
    job = _job(HOT, 40, hot_share=0.4)
    # the rest, 0.6, is shared evenly: 0.4 + 0.6 / 3 = 0.6 on the first of 3
    assert job.ps_shares([0, 1, 2]) == pytest.approx([0.6, 0.2, 0.2])
    assert job.ps_shares([0, 1, 2, 3, 4, 5]) == pytest.approx([0.5] + [0.1] * 5)
    assert job.ps_shares([3]) == [1.0]
    assert _job(HOT, 40).ps_shares([0, 1]) == [0.5, 0.5]
    # the first PS carries at least 0.4 of the traffic: 2 effective cores (its knee) plus
    # 0.25 of each core past it serve 100 steps/s with (0.1 x 0.4 x 100 - 2) / 0.25 + 2
    # = 10 cores; spread over 6 PS it still needs (0.1 x 0.5 x 100 - 2) / 0.25 + 2 = 14
    assert HOT.ps_cpu_for(100, 0.4) == pytest.approx(10.0)
    assert HOT.ps_cpu_for(100, 0.5) == pytest.approx(14.0)


def test_the_best_search_finds_the_comm_bound_peak():
    # 200 cores is more than the network can use: every worker of 4 cores, at each PS
    # count; the best is the fastest (workers, PS) pair by the model itself.
    best = best_allocation(_job(COMM, 200))
    expected = max(
        (COMM.uniform_speed(n, COMM.worker_factor(4 * f), p), n, p)
        for f in (1.0, 0.9, 0.8, 0.75, 0.6, 0.5, 0.35, 0.25)
        for n in range(1, 200)
        for p in range(1, 9)
        if n * 4 * f + 0.02 * COMM.uniform_speed(n, COMM.worker_factor(4 * f), p) <= 200
    )
    assert best.steps_per_sec == pytest.approx(expected[0])
    assert best.ps == 8  # more PS shorten the exchange


def test_the_best_counts_as_many_ps_as_the_run_had():
    # More PS shorten the comm-bound exchange, so a run that went past 8 PS must be
    # measured against a best searched that far: else reached/best exceeds 1.
    job = _job(COMM, 200)
    eight, twelve = best_allocation(job), best_allocation(job, max_ps=12)
    assert (eight.ps, twelve.ps) == (8, 12)
    assert twelve.steps_per_sec > eight.steps_per_sec

    def run_with_ps(most_ps: int) -> Run:
        run = Run(scenario=job, seed=0)
        run.timeline = [
            Sample(t, 1.0, 10.0, 1000.0, 0.0, 1, ps, 1)
            for t, ps in ((0.0, 1), (30.0, most_ps), (60.0, 2))
        ]
        return run

    assert run_best(run_with_ps(12)) == twelve
    assert run_best(run_with_ps(3)) == eight  # a run with fewer PS is still searched to 8
