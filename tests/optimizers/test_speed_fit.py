"""speed_fit: a job's speed points fitted to
1 / speed = t0 + t1/w + t2/(w c) + t3 w + t4/p + t5/n + t6 w/n^2."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from brain.optimizing.speed_fit import Configuration, SpeedPoint, fit


def exact(trainers, cpu, seconds_per_step, ps_cpu=8.0, samples=30):
    return SpeedPoint(Configuration(trainers, cpu, ps_cpu), 1 / seconds_per_step, samples)


def test_the_fit_recovers_the_parameters_of_a_known_curve():
    # 1 / speed = 0.01 + 0.2 / w + 0.001 w at w = 1, 2, 4, 8, 16 (4 cores each, 8 PS cores)
    curve = lambda w: 0.01 + 0.2 / w + 0.001 * w  # noqa: E731
    fitted = fit([exact(w, 4.0, curve(w)) for w in (1, 2, 4, 8, 16)])
    parameters = fitted.parameters
    assert math.isclose(parameters["serial"], 0.01, rel_tol=1e-6)
    assert math.isclose(parameters["per_trainer"], 0.2, rel_tol=1e-6)
    assert math.isclose(parameters["per_added_trainer"], 0.001, rel_tol=1e-6)
    assert parameters["per_trainer_core"] == parameters["per_ps_core"] == 0.0
    assert parameters["per_ps"] == parameters["per_trainer_per_ps"] == 0.0
    # at 32 trainers: 1 / (0.01 + 0.00625 + 0.032) = 20.7254 steps/s, and the points leave
    # no doubt about it
    predicted = fitted.predict(Configuration(32, 4.0, 8.0))
    assert math.isclose(predicted.steps_per_sec, 1 / 0.04825, rel_tol=1e-6)
    assert predicted.uncertainty < 1e-6
    assert not predicted.measured


def test_the_fit_tells_the_cpu_part_from_the_count_part():
    # 1 / speed = 0.05 + 0.8 / (w c): doubling the cores per trainer is as good as doubling
    # the trainers
    points = [exact(w, c, 0.05 + 0.8 / (w * c)) for w, c in ((2, 2), (4, 2), (4, 4), (8, 1))]
    parameters = fit(points).parameters
    assert math.isclose(parameters["serial"], 0.05, rel_tol=1e-6)
    assert math.isclose(parameters["per_trainer_core"], 0.8, rel_tol=1e-6)
    assert parameters["per_trainer"] == parameters["per_added_trainer"] == 0.0


def test_one_point_leaves_the_fit_unsure_between_flat_linear_and_worse():
    # 10 steps/s at 4 trainers: at 8, each one-part curve through the point says something
    # else: flat (serial, the first), linear in the trainers (20) or 1/w (5)
    fitted = fit([SpeedPoint(Configuration(4, 2.0, 8.0), 10.0, 10)])
    predicted = fitted.predict(Configuration(8, 2.0, 8.0))
    assert (predicted.steps_per_sec, predicted.low, predicted.high) == (10.0, 5.0, 20.0)
    assert predicted.uncertainty == 1.5


def test_a_measured_configuration_is_its_mean_within_two_standard_errors():
    point = SpeedPoint(Configuration(4, 2.0, 8.0), 10.0, samples=36, noise=0.03)
    predicted = fit([point]).predict(Configuration(4, 2.0, 8.0))
    # standard error 0.03 / 6 = 0.005 of 10 steps/s: 10 +- 0.1
    assert predicted.measured
    assert (predicted.steps_per_sec, predicted.low, predicted.high) == (10.0, 9.9, 10.1)


def test_no_point_of_positive_speed_is_no_fit():
    assert fit([]) is None
    assert fit([SpeedPoint(Configuration(4, 2.0), 0.0, 10)]) is None


def test_trainers_without_known_cores_neither_fit_nor_divide_by_zero():
    # Trainer cores unknown (0): the point says nothing of the compute part, so the fit is
    # made of the other point alone, and a configuration without cores takes no step.
    points = [
        SpeedPoint(Configuration(4, 0.0, 8.0), 3.0, 10),
        SpeedPoint(Configuration(4, 2.0, 8.0), 10.0, 10),
    ]
    fitted = fit(points)
    assert [p.steps_per_sec for p in fitted.points] == [10.0]
    predicted = fitted.predict(Configuration(8, 0.0, 8.0))
    assert (predicted.steps_per_sec, predicted.low, predicted.high) == (0.0, 0.0, 0.0)
    assert fit(points[:1]) is None


@settings(max_examples=50, deadline=None)
@given(
    t0=st.floats(0.001, 0.1),
    t1=st.floats(0.01, 1.0),
    trainers=st.lists(st.integers(1, 64), min_size=2, max_size=6, unique=True),
)
def test_an_amdahl_curve_is_within_the_band_and_exact_from_three_points(t0, t1, trainers):
    fitted = fit([exact(w, 2.0, t0 + t1 / w) for w in trainers])
    middle = (min(trainers) + max(trainers)) // 2
    predicted = fitted.predict(Configuration(middle, 2.0, 8.0))
    truth = 1 / (t0 + t1 / middle)
    assert predicted.low * (1 - 1e-9) <= truth <= predicted.high * (1 + 1e-9)
    if len(trainers) >= 3:
        # two points fit more than one two-part curve exactly; three pin it down within
        # their noise (1 % per sample over 30 samples: a standard error of 0.18 %), or a
        # simpler curve explains them as well
        assert math.isclose(predicted.steps_per_sec, truth, rel_tol=0.004)


def at(trainers, ps, seconds_per_step, ps_cpu=8.0):
    return SpeedPoint(Configuration(trainers, 4.0, ps_cpu, ps), 1 / seconds_per_step, 30)


def test_a_network_bound_is_the_ps_count_and_one_more_ps_is_predicted():
    # 1 / speed = 0.01 + 0.2 / w + 0.05 / n: each step waits 0.05 / n s on the exchange with
    # n PS (8 PS cores in all whatever their count), measured at (w, n) = (2, 1), (4, 1),
    # (4, 2), (8, 4), (16, 2)
    curve = lambda w, n: 0.01 + 0.2 / w + 0.05 / n  # noqa: E731
    fitted = fit([at(w, n, curve(w, n)) for w, n in ((2, 1), (4, 1), (4, 2), (8, 4), (16, 2))])
    parameters = fitted.parameters
    assert math.isclose(parameters["per_ps"], 0.05, rel_tol=1e-6)
    assert math.isclose(parameters["serial"], 0.01, rel_tol=1e-6)
    # at 8 trainers and 2 PS: 0.01 + 0.025 + 0.025 = 0.06 s a step, 0.025 computing;
    # one more PS (3 of 4 cores): 0.01 + 0.025 + 0.01667 = 0.05167 s, +16.1 %. A twin as
    # plausible has PS cores (0.08 / 8) in place of the serial part: 0.025 + 0.08 / 12 +
    # 0.01667 = 0.04833 s, +24.1 %
    outlook = fitted.ps_outlook(Configuration(8, 4.0, 8.0, 2))
    assert math.isclose(outlook.waiting_share, 0.035 / 0.06, rel_tol=1e-6)
    assert math.isclose(outlook.ps_share, 0.025 / 0.06, rel_tol=1e-6)
    assert math.isclose(outlook.one_more_ps_gain, 0.06 / (0.035 + 0.05 / 3) - 1, rel_tol=1e-6)
    assert math.isclose(
        outlook.one_more_ps_high, 0.06 / (0.025 + 0.08 / 12 + 0.05 / 3) - 1, rel_tol=1e-6
    )


def test_ps_gains_at_any_count_split_today_s_cores_or_add_to_them():
    # The curve above at 8 trainers and 2 PS (0.06 s a step). Today's 8 PS cores split
    # over 6 PS: 0.01 + 0.025 + 0.05 / 6 = 0.04333 s, +38.5 %; the twin with PS cores in
    # place of the serial part keeps its 0.08 / 8 = 0.01 s, so every curve agrees
    curve = lambda w, n: 0.01 + 0.2 / w + 0.05 / n  # noqa: E731
    fitted = fit([at(w, n, curve(w, n)) for w, n in ((2, 1), (4, 1), (4, 2), (8, 4), (16, 2))])
    now = Configuration(8, 4.0, 8.0, 2)
    low, best, high = fitted.ps_gains(now, 6, 8.0)
    split = 0.06 / (0.035 + 0.05 / 6) - 1
    assert all(math.isclose(g, split, rel_tol=1e-6) for g in (low, best, high))
    # 6 PS of 4 cores (24 in all): the twin gains its PS cores too, 0.025 + 0.08 / 24 +
    # 0.05 / 6 = 0.03667 s, +63.6 %
    low, best, high = fitted.ps_gains(now, 6, 24.0)
    assert math.isclose(low, split, rel_tol=1e-6) and math.isclose(best, split, rel_tol=1e-6)
    assert math.isclose(high, 0.06 / (0.025 + 0.08 / 24 + 0.05 / 6) - 1, rel_tol=1e-6)


def test_trainers_waiting_on_each_other_are_no_network_bound_once_the_ps_count_varied():
    # 1 / speed = 0.2 / w + 0.002 w: the trainers wait on each other (synchronisation),
    # 39 % of a step at 8 trainers (0.016 of 0.041 s). At one PS count it could as well be
    # the PS links (0.008 w / n^2 at 2 PS): one more PS would then gain 0.041 /
    # (0.025 + 0.008 x 8 / 9) - 1 = +27.7 %, the band's high; the best curve says 0.
    curve = lambda w: 0.2 / w + 0.002 * w  # noqa: E731
    fitted = fit([at(w, 2, curve(w)) for w in (2, 4, 8, 16)])
    outlook = fitted.ps_outlook(Configuration(8, 4.0, 8.0, 2))
    assert math.isclose(outlook.waiting_share, 0.016 / 0.041, rel_tol=1e-6)
    assert outlook.ps_share == outlook.one_more_ps_gain == outlook.one_more_ps_low == 0.0
    assert math.isclose(outlook.one_more_ps_high, 0.041 / (0.025 + 0.064 / 9) - 1, rel_tol=1e-6)
    # Once the job ran 4 PS (of 4 cores each) at the same speed, no plausible curve
    # has the PS in it: the wait is the trainers' own
    points = [at(w, 2, curve(w)) for w in (2, 4, 8)] + [at(8, 4, curve(8), ps_cpu=16.0)]
    outlook = fit(points).ps_outlook(Configuration(8, 4.0, 8.0, 2))
    assert outlook.one_more_ps_high < 1e-9
    assert math.isclose(outlook.waiting_share, 0.016 / 0.041, rel_tol=1e-6)


def test_no_ps_count_no_outlook():
    fitted = fit([at(w, 2, 0.2 / w) for w in (2, 4)])
    assert fitted.ps_outlook(Configuration(4, 4.0, 8.0, 0)) is None
